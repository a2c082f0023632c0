"""A counter actor: counts calls and fired alarms in its own database.

Routes (under /counter/{id} at the front door):
    POST /incr             add one; answers {"count": n}
    GET  /count            answers {"count": n, "alarms_fired": m}
    POST /alarm?in_ms=N    set the alarm to now + N ms; answers {"alarm_at": t}
When the alarm fires, `on_alarm` adds one to "alarms_fired".

Build and serve:  see README.md next to this file.
"""

from __future__ import annotations

from collections.abc import Callable

from wkguest import Actor, Request, Response, alarm, export, lifecycle, sqlite

Route = Callable[[Request], Response]


def _get(name: str) -> int:
    n = sqlite.exec("SELECT n FROM counters WHERE name = ?", (name,)).scalar()
    return int(n) if isinstance(n, int) else 0


def _bump(name: str) -> int:
    # RETURNING gives the new value in the same statement: no read-modify-write race.
    rows = sqlite.exec("UPDATE counters SET n = n + 1 WHERE name = ? RETURNING n", (name,))
    n = rows.scalar()
    return int(n) if isinstance(n, int) else 0


def incr(req: Request) -> Response:
    return Response.json({"count": _bump("calls")})


def count(req: Request) -> Response:
    return Response.json({"count": _get("calls"), "alarms_fired": _get("alarms")})


def set_alarm(req: Request) -> Response:
    try:
        in_ms = int(req.arg("in_ms") or "0")
    except ValueError:
        return Response.json({"error": "in_ms must be an integer"}, status=400)
    at = lifecycle.now() + max(in_ms, 0)
    alarm.set(at)
    return Response.json({"alarm_at": at})


ROUTES: dict[tuple[str, str], Route] = {
    ("POST", "/incr"): incr,
    ("GET", "/count"): count,
    ("POST", "/alarm"): set_alarm,
}


class Counter(Actor):
    def on_init(self) -> None:
        sqlite.exec(
            "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL);"
            "INSERT OR IGNORE INTO counters VALUES ('calls', 0), ('alarms', 0)"
        )

    def on_alarm(self) -> None:
        _bump("alarms")

    def handle(self, req: Request) -> Response:
        route = ROUTES.get((req.method, req.path))
        if route is not None:
            return route(req)
        if any(path == req.path for _, path in ROUTES):
            return Response.json({"error": f"method {req.method} not allowed"}, status=405)
        return Response.json({"error": f"no route {req.path}"}, status=404)


Handler = export(Counter)
