"""The ledger: the service an order's steps call (reserve, charge, release, notify).

Every operation is idempotent by the key the workflow passes (`step_keyed`), and every
call is counted in `calls`, so a test can tell a step that ran again from one that did
not. Two knobs let the example show failures on purpose:
- /charge answers 503 for the first `fail_times` attempts of a key (a flaky service);
- /notify answers 500 when asked to `fail` (a service that is down for good).

Routes (POST, JSON in and out, under /ledger/{id}):
    /reserve {order, item, qty, key}          {"reservation": "res-<order>"}
    /charge  {order, amount, key, fail_times} {"charge_id": "ch-<order>"} | 503
    /release {order, key}                     {"released": "res-<order>"}
    /notify  {order, fail}                    {"notified": order} | 500
    /attempt {key}                            {"n": how many times this key was seen}
    /invoice {order}                          {"number": the next invoice number}: not
                                              idempotent on purpose (no key)
    GET /calls                                {"calls": [[op, key, n], ...]}
    GET /charges                              {"charges": [[key, order, amount], ...]}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wkguest import Actor, Request, Response, export, sqlite


def _count(op: str, key: str) -> int:
    rows = sqlite.exec(
        "INSERT INTO calls (op, key, n) VALUES (?, ?, 1) "
        "ON CONFLICT (op, key) DO UPDATE SET n = n + 1 RETURNING n", (op, key))
    return int(rows.scalar() or 0)


def reserve(body: dict[str, Any]) -> Response:
    _count("reserve", body["key"])
    return Response.json({"reservation": f"res-{body['order']}"})


def charge(body: dict[str, Any]) -> Response:
    n = _count("charge", body["key"])
    if n <= int(body.get("fail_times", 0)):
        return Response.json({"error": f"payment service busy (attempt {n})"}, status=503)
    # The charge itself is recorded once per key, whatever the retries: idempotency.
    sqlite.exec_durable("INSERT OR IGNORE INTO charges VALUES (?, ?, ?)",
                        (body["key"], body["order"], int(body["amount"])))
    return Response.json({"charge_id": f"ch-{body['order']}"})


def release(body: dict[str, Any]) -> Response:
    _count("release", body["key"])
    return Response.json({"released": f"res-{body['order']}"})


def notify(body: dict[str, Any]) -> Response:
    _count("notify", body["order"])
    if body.get("fail"):
        return Response.json({"error": "the mail service is down"}, status=500)
    return Response.json({"notified": body["order"]})


def attempt(body: dict[str, Any]) -> Response:
    return Response.json({"n": _count("attempt", body["key"])})


def invoice(body: dict[str, Any]) -> Response:
    # Numbered by how many invoices were asked for, whoever asked: a call made again
    # takes a new number. A real ledger would key it as the others are.
    return Response.json({"number": _count("invoice", "")})


ROUTES: dict[str, Callable[[dict[str, Any]], Response]] = {
    "/reserve": reserve, "/charge": charge, "/release": release, "/notify": notify,
    "/attempt": attempt, "/invoice": invoice,
}


class Ledger(Actor):
    def on_init(self) -> None:
        sqlite.exec(
            "CREATE TABLE calls (op TEXT, key TEXT, n INTEGER, PRIMARY KEY (op, key));"
            "CREATE TABLE charges (key TEXT PRIMARY KEY, ord TEXT, amount INTEGER)")

    def handle(self, req: Request) -> Response:
        if req.method == "GET" and req.path == "/calls":
            rows = sqlite.exec("SELECT op, key, n FROM calls ORDER BY op, key").rows
            return Response.json({"calls": [list(r) for r in rows]})
        if req.method == "GET" and req.path == "/charges":
            rows = sqlite.exec("SELECT key, ord, amount FROM charges ORDER BY key").rows
            return Response.json({"charges": [list(r) for r in rows]})
        route = ROUTES.get(req.path)
        if route is None or req.method != "POST":
            return Response.json({"error": f"no route {req.method} {req.path}"}, status=404)
        try:
            body = json.loads(req.body or b"{}")
        except ValueError:
            return Response.json({"error": "the body is not JSON"}, status=400)
        return route(body)


Handler = export(Ledger)
