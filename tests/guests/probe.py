"""The probe: one test guest whose routes exercise the host, for the e2e tests.

Routes match on the path only (the method shown is the intended one). Query arguments
come from the raw query string. Answers are JSON unless noted. "Error as data" answers
({"error": ...}) have status 200; an unknown path is 404 {"error": "no route ..."}.
Blobs in JSON, both ways, are {"b64": "<base64>"}.

Identity and echo
  GET  /echo                  the request body back, unchanged (bytes); header x-len = its length
  GET  /whoami                {"sender": "public"|"actor"|"operator", "actor": [cls, id]|null,
                               "self": [cls, id], "method", "path", "query", "headers": [[k, v]...]}
  GET  /now                   {"now": host clock ms}
  GET  /big?kb=N              N KiB of bytes 0, 1, ..., 255, 0, 1, ... (application/octet-stream)

SQLite
  POST /sql    body {"sql", "params": [...], "durable": bool}
                              {"columns", "rows", "changes", "last_insert_rowid"} | {"error"}
  POST /query  body {"sql", "params"}   (through query-packed)   {"rows"} | {"error"}
  GET  /log                   {"rows": [[kind, at], ...]} from table log (see on_init/on_alarm)

Alarm
  POST /alarm/set?at=MS       {"at": MS} | {"error"}
  POST /alarm/clear           {"at": null} | {"error"}
  GET  /alarm                 {"at": MS|null}
  POST /hold?ms=M[&alarms=N][&state=S]   logs ("hold", now), then answers {"alarms": alarm
                              events logged, "hold_state": the request's wk-hold-state
                              header|null, "sender"}; while fewer than
                              N (default 1) alarm events are logged, the answer carries
                              wk-hold-ms: M (raw) and, with `state`, wk-hold-state: S

Lifecycle (the behaviour depends on the actor id's prefix)
  on_init   creates tables log(kind TEXT, at INTEGER) and rearm(at INTEGER), inserts
            ("init", now) into log. Id "init-trap...": then traps (an uncaught
            BaseException: the host must keep nothing); but id "init-trap-until-<MS>"
            traps only while the host clock is before MS, then initialises normally.
            Id "init-err...": raises InitError (on-init returns err
            "init refused by probe"), after creating the tables too.
  on_alarm  inserts ("alarm", now) into log. Id "alarm-trap...": then traps.
            Id "alarm-err...": then raises RuntimeError (on-alarm returns err).
            If table rearm has a row, sets the alarm to its `at` (the guest re-set it);
            `at` -1 sets it to now (lifecycle.now()), and `at` -2 to a different time
            in the past on every event (the number of alarms logged so far): due at
            once, every time.
  POST /delete-self           calls delete_self; {"deleted": true}
  POST /say  body {"message", "level"?, "fields"?: {name: value}, "times"?: N}
                              N records in the host's log (wkguest.log); {"said": N}
  POST /count body {"samples": [["add" | "observe", name, value, {label: value}], ...],
                    "raw"?: text, "raw_pad"?: N}
                              each sample to wkguest.metrics, and `raw` (then N x's)
                              straight to WIT metrics.submit;
                              {"refused": [wkguest's reason or null]}
  POST /spans body {"names": [...], "attributes"?: {...}, "end"?: bool, "trap"?: bool}
                              begins a span per name (wkguest.trace), each inside the one
                              before, ends them (innermost first) unless end is false,
                              then traps if asked; {"handles": [...]}

Budgets and failures (these trap or burn resources on purpose)
  POST /spin                  `while True: pass` (fuel budget)
  POST /spin-wall?ms=N        busy-loops on the host clock until N ms passed; {"spun_ms"}
  POST /block  body {"url", "timeout_ms"?}   http.fetch of a (slow) URL: a host call that
                              blocks (wall deadline); {"status"} | {"error_kind", "error"}
  POST /alloc?mb=N            allocates and touches N MiB; {"len": bytes}
  POST /recurse?n=N[&raise_limit=0]   Python recursion N deep; {"depth": N}. The recursion
                              limit is raised to fit N unless raise_limit=0, in which case a
                              RecursionError is answered as {"error": "RecursionError: ..."}
  POST /trap                  raises an uncaught exception (trap)
  POST /divide?by=N           {"quotient": 1 / N}; by=0 (the default) raises an uncaught
                              ZeroDivisionError (trap)
  POST /print?n=N             prints N lines to stdout ("probe stdout i") and to stderr
                              ("probe stderr i"); {"printed": N}

Other actors and the network
  POST /call   body {"cls", "id", "method"?, "path"?, "body"?: str, "headers"?, "query"?}
                              {"status", "body": str, "headers"} | {"error": CallError reason}
  POST /fetch  body {"url", "method"?, "body"?: str, "headers"?, "timeout_ms"?}
                              {"status", "body": str, "headers"} | {"error_kind", "error"}
  POST /overlap  body {"requests": [{"fetch": {as /fetch}} | {"call": {as /call,
                              "timeout_ms"?}}, ...]}   all made together (wkguest.overlap):
                              {"answers": [{"status", "body"} | {"error_kind", "error"}],
                              "took_ms"}
  POST /wait-then-call  body {"url", "call": {as /call}}   fetches `url` first (a slow
                              server holds this actor busy), then makes the call; answers
                              as /call, plus "fetched": status | "fetch_error": reason
  POST /chain  body {"hops": [[cls, id], ...]}   calls the first hop's /chain with the rest;
                              the last hop answers {"id": its id, "self": [cls, id]}. Each hop
                              passes its callee's response through; a failed call answers
                              {"error": reason, "at": [cls, id]} (status 200).

Sandbox
  GET  /wasi?port=P           {"read_passwd", "listdir_root", "environ", "socket"}: each
                              {"ok": bool, "detail": str}. ok is true only if the guest GOT
                              something: file bytes, a non-empty listing, a non-empty
                              environment, a connection. So "all denied" is: every ok false.
                              (componentize-py sets PYTHONHOME, PYTHONPATH, PYTHONUNBUFFERED
                              at build time; those three are not counted.)
"""

from __future__ import annotations

import base64
import gc
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from wkguest import (
    Actor,
    Request,
    Response,
    actors,
    alarm,
    export,
    http,
    lifecycle,
    overlap,
    sqlite,
)
from wkguest import _bindings as _b
from wkguest import log as guest_log
from wkguest import metrics as guest_metrics
from wkguest import trace as guest_trace
from wkguest.errors import AlarmError, CallError, FetchError, InitError, SqliteError

try:  # imported now: at run time no new module can be found (build-time snapshot)
    import socket
except ImportError:  # pragma: no cover - depends on the guest's CPython build
    socket = None  # type: ignore[assignment]

BUILD_ENV = {"PYTHONHOME", "PYTHONPATH", "PYTHONUNBUFFERED"}


class Trap(BaseException):
    """Escapes every SDK hook: the export traps instead of returning an error."""


def _args(req: Request, name: str, default: int) -> int:
    return int(req.arg(name) or default)


def _enc(v: Any) -> Any:
    return {"b64": base64.b64encode(v).decode()} if isinstance(v, bytes) else v


def _dec(v: Any) -> Any:
    return base64.b64decode(v["b64"]) if isinstance(v, dict) and "b64" in v else v


def _me() -> list[str]:
    ref = lifecycle.self_ref()
    return [ref.cls, ref.id]


def _ok(**kw: Any) -> Response:
    return Response.json(kw)


# ---- identity and echo ------------------------------------------------------------------


def echo(req: Request) -> Response:
    r = Response.bytes(req.body)
    r.headers.append(("x-len", str(len(req.body))))
    return r


def whoami(req: Request) -> Response:
    actor = req.sender.actor
    return _ok(
        sender=req.sender.kind,
        actor=[actor.cls, actor.id] if actor else None,
        self=_me(),
        method=req.method,
        path=req.path,
        query=req.query,
        headers=[list(h) for h in req.headers],
    )


def now(req: Request) -> Response:
    return _ok(now=lifecycle.now())


def big(req: Request) -> Response:
    return Response.bytes(bytes(range(256)) * (4 * _args(req, "kb", 1)))


# ---- sqlite -----------------------------------------------------------------------------


def sql(req: Request) -> Response:
    doc = req.json()
    params = [_dec(p) for p in doc.get("params", [])]
    run = sqlite.exec_durable if doc.get("durable") else sqlite.exec
    try:
        r = run(doc["sql"], params)
    except SqliteError as e:
        return _ok(error=str(e))
    rows = [[_enc(v) for v in row] for row in r.rows]
    return _ok(
        columns=r.columns, rows=rows, changes=r.changes, last_insert_rowid=r.last_insert_rowid
    )


def write(req: Request) -> Response:
    doc = req.json()
    params = [_dec(p) for p in doc.get("params", [])]
    try:
        changes = sqlite.write(doc["sql"], params, durable=bool(doc.get("durable")))
    except SqliteError as e:
        return _ok(error=str(e))
    return _ok(changes=changes)


def query(req: Request) -> Response:
    doc = req.json()
    try:
        rows = sqlite.query(doc["sql"], [_dec(p) for p in doc.get("params", [])])
    except SqliteError as e:
        return _ok(error=str(e))
    return _ok(rows=[[_enc(v) for v in row] for row in rows])


def log(req: Request) -> Response:
    return _ok(rows=[list(r) for r in sqlite.query("SELECT kind, at FROM log ORDER BY rowid")])


def say(req: Request) -> Response:
    d = req.json()
    for _ in range(int(d.get("times", 1))):
        guest_log.write(d.get("level", "info"), d["message"], **d.get("fields", {}))
    return _ok(said=int(d.get("times", 1)))


def spans(req: Request) -> Response:
    d = req.json()
    handles = [guest_trace.begin(n, "", **d.get("attributes", {})) for n in d["names"]]
    if d.get("end", True):
        for h in reversed(handles):
            guest_trace.end(h)
    if d.get("trap"):
        raise RuntimeError("probe: trap inside spans")
    return _ok(handles=handles)


def count(req: Request) -> Response:
    refused: list[str | None] = []
    d = req.json()
    if "raw" in d:
        _b.metrics.submit(d["raw"] + "x" * int(d.get("raw_pad", 0)))
    for kind, name, value, labels in d.get("samples", []):
        try:
            getattr(guest_metrics, kind)(name, value, **labels)
            refused.append(None)
        except guest_metrics.MetricRefused as e:
            refused.append(str(e))
    return _ok(refused=refused)


# ---- alarm ------------------------------------------------------------------------------


def hold(req: Request) -> Response:
    """Asks the front door to hold the answer (`wk-hold-ms`, raw from `ms`) while fewer
    than `alarms` alarm events are logged; the answer tells what this delivery saw."""
    sqlite.exec("INSERT INTO log VALUES ('hold', ?)", (lifecycle.now(),))
    alarms = sqlite.exec("SELECT count(*) FROM log WHERE kind = 'alarm'").scalar()
    r = _ok(alarms=alarms, hold_state=req.header("wk-hold-state"),
            sender=req.sender.kind)
    if isinstance(alarms, int) and alarms < _args(req, "alarms", 1):
        r.headers.append(("wk-hold-ms", req.arg("ms") or "0"))
        if req.arg("state") is not None:
            r.headers.append(("wk-hold-state", req.arg("state") or ""))
    return r


def alarm_set(req: Request) -> Response:
    at = _args(req, "at", 0)
    try:
        alarm.set(at)
    except AlarmError as e:
        return _ok(error=str(e))
    return _ok(at=at)


def alarm_clear(req: Request) -> Response:
    try:
        alarm.clear()
    except AlarmError as e:
        return _ok(error=str(e))
    return _ok(at=None)


def alarm_get(req: Request) -> Response:
    return _ok(at=alarm.get())


def delete_self(req: Request) -> Response:
    lifecycle.delete_self()
    return _ok(deleted=True)


# ---- budgets and failures ---------------------------------------------------------------


def spin(req: Request) -> Response:
    while True:
        pass


def spin_wall(req: Request) -> Response:
    start = lifecycle.now()
    end = start + _args(req, "ms", 100)
    t = start
    while t < end:
        t = lifecycle.now()
    return _ok(spun_ms=t - start)


def block(req: Request) -> Response:
    doc = req.json()
    try:
        r = http.fetch(doc["url"], timeout_ms=doc.get("timeout_ms"))
    except FetchError as e:
        return _ok(error_kind=e.kind, error=str(e))
    return _ok(status=r.status)


def alloc(req: Request) -> Response:
    buf = bytearray(_args(req, "mb", 1) * 1024 * 1024)
    for i in range(0, len(buf), 4096):  # touch every page so it is really committed
        buf[i] = 1
    return _ok(len=len(buf))


def _depth(k: int) -> int:
    return 0 if k == 0 else 1 + _depth(k - 1)


def recurse(req: Request) -> Response:
    n = _args(req, "n", 100)
    if _args(req, "raise_limit", 1) and sys.getrecursionlimit() < n + 100:
        sys.setrecursionlimit(n + 100)
    try:
        return _ok(depth=_depth(n))
    except RecursionError as e:
        return _ok(error=f"RecursionError: {e}")


def trap(req: Request) -> Response:
    raise RuntimeError("probe: trap requested")


def divide(req: Request) -> Response:
    return _ok(quotient=1 / _args(req, "by", 0))


def print_lines(req: Request) -> Response:
    n = _args(req, "n", 1)
    for i in range(n):
        print(f"probe stdout {i}")
        print(f"probe stderr {i}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    return _ok(printed=n)


# ---- other actors and the network -------------------------------------------------------


def _reply(status: int, headers: list[tuple[str, str]], body: bytes) -> Response:
    text = body.decode("utf-8", "replace")
    return _ok(status=status, body=text, headers=[list(h) for h in headers])


def call(req: Request) -> Response:
    return _call(req.json())


def _call(d: dict[str, Any]) -> Response:
    try:
        r = actors.call(
            d["cls"], d["id"], d.get("method", "POST"), d.get("path", "/"),
            d.get("body", ""), [tuple(h) for h in d.get("headers", [])], d.get("query", ""),
        )
    except CallError as e:
        return _ok(error=e.reason)
    return _reply(r.status, r.headers, r.body)


def fetch(req: Request) -> Response:
    d = req.json()
    try:
        r = http.fetch(
            d["url"], d.get("method", "GET"), [tuple(h) for h in d.get("headers", [])],
            d.get("body", ""), d.get("timeout_ms"),
        )
    except FetchError as e:
        return _ok(error_kind=e.kind, error=str(e))
    return _reply(r.status, r.headers, r.body)


def overlapped(req: Request) -> Response:
    """Each of the body's "requests" ({"fetch": {url, method?, headers?, body?,
    timeout_ms?}} or {"call": {cls, id, method?, path?, body?, timeout_ms?}}) made
    together (wkguest.overlap): each one's answer or error, in order, and the host
    time they took together."""
    async def one(r: dict[str, Any]) -> dict[str, Any]:
        try:
            if "fetch" in r:
                f = r["fetch"]
                got = await overlap.fetch(f["url"], f.get("method", "GET"),
                                          [tuple(h) for h in f.get("headers", [])],
                                          f.get("body", ""), f.get("timeout_ms"))
            else:
                c = r["call"]
                got = await overlap.call(c["cls"], c["id"], c.get("method", "POST"),
                                         c.get("path", "/"), c.get("body", ""),
                                         timeout_ms=c.get("timeout_ms"))
        except (FetchError, CallError) as e:
            return {"error_kind": e.kind, "error": str(e)}
        return {"status": got.status, "body": got.body.decode("utf-8", "replace")}

    began = lifecycle.now()
    answers = overlap.run(*(one(r) for r in req.json()["requests"]))
    return _ok(answers=answers, took_ms=lifecycle.now() - began)


def wait_then_call(req: Request) -> Response:
    d = req.json()
    try:
        waited: dict[str, Any] = {"fetched": http.fetch(d["url"]).status}
    except FetchError as e:
        waited = {"fetch_error": str(e)}
    r = _call(d["call"])
    return Response.json({**json.loads(r.body), **waited}, status=r.status)


def chain(req: Request) -> Response:
    hops = req.json().get("hops", [])
    if not hops:
        return _ok(id=lifecycle.self_ref().id, self=_me())
    (cls, id_), rest = hops[0], hops[1:]
    try:
        return actors.call(cls, id_, "POST", "/chain", json.dumps({"hops": rest}))
    except CallError as e:
        return _ok(error=e.reason, at=_me())


# ---- sandbox ----------------------------------------------------------------------------


def _attempt(fn: Callable[[], tuple[bool, str]]) -> dict[str, Any]:
    try:
        ok, detail = fn()
    except Exception as e:
        return {"ok": False, "detail": f"{type(e).__name__}: {e}"}
    return {"ok": ok, "detail": detail}


def _read_passwd() -> tuple[bool, str]:
    with open("/etc/passwd", "rb") as f:
        data = f.read()
    return bool(data), f"read {len(data)} bytes"


def _listdir_root() -> tuple[bool, str]:
    names = os.listdir("/")
    return bool(names), repr(sorted(names))


def _environ() -> tuple[bool, str]:
    env = {k: v for k, v in os.environ.items() if k not in BUILD_ENV}
    return bool(env), repr(sorted(env))


def _socket(port: int) -> tuple[bool, str]:
    if socket is None:
        return False, "no socket module"
    # A numeric address and a bare socket: create_connection would resolve the name
    # through the idna codec, which is not in the snapshot (a LookupError, not a denial).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect(("127.0.0.1", port))
    return True, f"connected to 127.0.0.1:{port}"


def wasi(req: Request) -> Response:
    port = _args(req, "port", 80)
    return _ok(
        read_passwd=_attempt(_read_passwd),
        listdir_root=_attempt(_listdir_root),
        environ=_attempt(_environ),
        socket=_attempt(lambda: _socket(port)),
    )


# Module state lives as long as the instance: what one instance remembers, no other
# instance may see, even one made in the same pooled memory slot afterwards.
_REMEMBERED: list[str] = []


def remember(req: Request) -> Response:
    _REMEMBERED.append(req.body.decode())
    return _ok(remembered=_REMEMBERED)


def gc_state(req: Request) -> Response:
    """The cyclic collector as this instance sees it: on, and the snapshot's objects frozen
    (`export` freezes them), so that a collection walks only what the instance made."""
    gc.collect()
    return _ok(enabled=gc.isenabled(), frozen=gc.get_freeze_count(),
               tracked=len(gc.get_objects()))


ROUTES: dict[str, Callable[[Request], Response]] = {
    "/gc": gc_state,
    "/echo": echo,
    "/remember": remember,
    "/whoami": whoami,
    "/now": now,
    "/big": big,
    "/sql": sql,
    "/write": write,
    "/query": query,
    "/log": log,
    "/say": say,
    "/count": count,
    "/spans": spans,
    "/hold": hold,
    "/alarm/set": alarm_set,
    "/alarm/clear": alarm_clear,
    "/alarm": alarm_get,
    "/delete-self": delete_self,
    "/spin": spin,
    "/spin-wall": spin_wall,
    "/block": block,
    "/alloc": alloc,
    "/recurse": recurse,
    "/trap": trap,
    "/divide": divide,
    "/print": print_lines,
    "/call": call,
    "/fetch": fetch,
    "/wait-then-call": wait_then_call,
    "/overlap": overlapped,
    "/chain": chain,
    "/wasi": wasi,
}


def _trap_now(actor_id: str) -> bool:
    prefix = "init-trap-until-"
    if not actor_id.startswith(prefix):
        return True
    return lifecycle.now() < int(actor_id[len(prefix):])


# On-init scripts of their own for actors "schema-a..." and "schema-b...", and nothing
# else in their on-init ("nosql-..." runs none): what the host's schema images learn
# from (tests/host/test_schema_images.py). Without
# IF NOT EXISTS on purpose: run on a database that already has the tables, they fail.
SCHEMA_A = "CREATE TABLE a_one (k TEXT PRIMARY KEY, v); CREATE INDEX a_one_v ON a_one (v)"
SCHEMA_B = "CREATE TABLE b_one (x)"


class Probe(Actor):
    def on_init(self) -> None:
        me = lifecycle.self_ref().id
        if me.startswith("nosql-"):
            return
        if me.startswith("schema-"):
            sqlite.exec(SCHEMA_A if me.startswith("schema-a") else SCHEMA_B)
            return
        sqlite.exec(
            "CREATE TABLE IF NOT EXISTS log (kind TEXT, at INTEGER);"
            "CREATE TABLE IF NOT EXISTS rearm (at INTEGER)"
        )
        sqlite.exec("INSERT INTO log VALUES ('init', ?)", (lifecycle.now(),))
        if me.startswith("init-trap") and _trap_now(me):
            raise Trap("probe: on_init trap requested")
        if me.startswith("init-err"):
            raise InitError("init refused by probe")

    def on_alarm(self) -> None:
        sqlite.exec("INSERT INTO log VALUES ('alarm', ?)", (lifecycle.now(),))
        me = lifecycle.self_ref().id
        if me.startswith("alarm-trap"):
            raise Trap("probe: on_alarm trap requested")
        if me.startswith("alarm-err"):
            raise RuntimeError("probe: on_alarm error requested")
        at = sqlite.exec("SELECT at FROM rearm LIMIT 1").scalar()
        if isinstance(at, int):
            if at == -1:
                at = lifecycle.now()
            elif at < 0:
                at = sqlite.exec("SELECT count(*) FROM log WHERE kind = 'alarm'").scalar()
            alarm.set(int(at or 0))

    def handle(self, req: Request) -> Response:
        if req.path == "/mine":
            # State on the actor object: one object per actor, even in a reused instance.
            self.mine = [*getattr(self, "mine", []), req.body.decode()]
            return _ok(mine=self.mine)
        route = ROUTES.get(req.path)
        if route is None:
            return Response.json({"error": f"no route {req.path}"}, status=404)
        return route(req)


Handler = export(Probe)
