"""A guest that sets its own deadline (lifecycle.narrow-deadline) and then runs long, in
each way a step's attempt can: SQL, a fetch, an actor call, pure CPU.

    POST /run   body {"steps": [step, ...]}, run in order; answers {"results": [...]},
                one per step: {"ok": value} or {"error": reason}. A step is one of
        {"narrow": ms | null}   lifecycle.narrow_deadline(ms)                -> null
        {"sql": n}              a recursive CTE that counts to n             -> n
        {"fetch": url}          http.fetch(url)                              -> status
        {"call": id, "steps": [...]}   POST /run to narrow/<id>              -> its results
        {"spin_ms": ms}         busy-loops on the WASI clock for ms          -> null
        {"last_trap": true}     lifecycle.last_trap()                        -> reason
    An actor whose id starts with "init-narrow" narrows its deadline to 50 ms in on_init
    and never lifts it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from wkguest import Actor, Request, Response, actors, export, http, lifecycle, sqlite
from wkguest.errors import CallError, FetchError, SqliteError

COUNT = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
         "SELECT count(*) FROM c")


def _spin(ms: int) -> None:
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        pass


def _call(step: dict[str, Any]) -> Any:
    body = json.dumps({"steps": step["steps"]})
    r = actors.call("narrow", step["call"], "POST", "/run", body)
    return json.loads(r.body) if r.status == 200 else f"status {r.status}"


def _step(step: dict[str, Any]) -> Any:
    if "narrow" in step:
        return lifecycle.narrow_deadline(step["narrow"])
    if "sql" in step:
        return sqlite.exec(COUNT, (step["sql"],)).scalar()
    if "fetch" in step:
        return http.fetch(step["fetch"]).status
    if "call" in step:
        return _call(step)
    if "spin_ms" in step:
        return _spin(step["spin_ms"])
    if "last_trap" in step:
        return lifecycle.last_trap()
    raise ValueError(f"no such step: {step}")


def _run(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for step in steps:
        try:
            results.append({"ok": _step(step)})
        except (SqliteError, FetchError, CallError) as e:
            results.append({"error": str(e)})
    return results


class Narrow(Actor):
    def on_init(self) -> None:
        if lifecycle.self_ref().id.startswith("init-narrow"):
            lifecycle.narrow_deadline(50)

    def handle(self, req: Request) -> Response:
        if req.path == "/run":
            return Response.json({"results": _run(req.json()["steps"])})
        return Response.json({"error": f"no route {req.path}"}, status=404)


Handler = export(Narrow)
