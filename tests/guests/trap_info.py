"""A guest whose calls end in each kind of trap, and that reads back why
(`lifecycle.last_trap_info`, beside `last_trap`).

    POST /spin            loops, calling the WASI clock, until a budget cuts it
    POST /narrow?ms=N     narrows its deadline to N ms (lifecycle.narrow-deadline), then
                          loops as /spin
    POST /raise           raises TrapInfoError("trap_info: raised on purpose"), uncaught
    POST /abort           raises a BaseException (not an Exception), uncaught
    POST /alloc?mb=N      allocates N MiB (a MemoryError past the host's memory cap)
    POST /flood?n=N       prints N lines, then raises TrapInfoError
    POST /says-oom        prints "MemoryError", then raises TrapInfoError
    POST /keep            writes a row: the actor keeps its database when it is let go
    POST /keep-durable    writes a row with exec-durable (in cluster mode, the store may
                          refuse it)
    POST /alarm?at=MS     sets the alarm: its on-alarm writes a row with exec-durable
    GET  /info            {"text": last_trap(), "info": last_trap_info() or null}, the
                          info as {"kind", "message", "exception": {"type_name",
                          "message", "traceback"} or null}
"""

from __future__ import annotations

import time
from typing import Any

from wkguest import Actor, Request, Response, alarm, export, lifecycle, sqlite


class TrapInfoError(Exception):
    """The exception /raise and /flood end with."""


class Abort(BaseException):
    """Escapes every SDK hook."""


def _spin() -> None:
    while True:  # each turn calls the clock: a narrowed deadline traps at a call
        time.monotonic()


def _raise() -> None:
    raise TrapInfoError("trap_info: raised on purpose")


def _info() -> dict[str, Any]:
    info = lifecycle.last_trap_info()
    text = lifecycle.last_trap()
    if info is None:
        return {"text": text, "info": None}
    e = info.exception
    exc = None if e is None else {"type_name": e.type_name, "message": e.message,
                                  "traceback": e.traceback}
    return {"text": text, "info": {"kind": info.kind.value, "message": info.message,
                                   "exception": exc}}


class TrapInfo(Actor):
    def handle(self, req: Request) -> Response:
        if req.path == "/info":
            return Response.json(_info())
        if req.path == "/keep":
            sqlite.exec("CREATE TABLE IF NOT EXISTS kept (x)")
            sqlite.exec("INSERT INTO kept VALUES (1)")
            return Response.json({"kept": True})
        if req.path == "/keep-durable":  # in cluster mode, a write the store may refuse
            sqlite.exec("CREATE TABLE IF NOT EXISTS kept (x)")
            sqlite.exec_durable("INSERT INTO kept VALUES (1)")
            return Response.json({"kept": True})
        if req.path == "/alarm":
            alarm.set(int(req.arg("at") or 0))
            return Response.json({"at": alarm.get()})
        if req.path == "/narrow":
            lifecycle.narrow_deadline(int(req.arg("ms") or 100))
            _spin()
        if req.path == "/spin":
            _spin()
        if req.path == "/abort":
            raise Abort("trap_info: abort requested")
        if req.path == "/alloc":
            return Response.json({"len": len(bytearray(int(req.arg("mb") or 1) << 20))})
        if req.path == "/flood":
            for i in range(int(req.arg("n") or 1)):
                print(f"trap_info flood {i}")
        if req.path == "/says-oom":
            print("MemoryError")  # only a word it writes: it has memory enough
        if req.path in ("/raise", "/flood", "/says-oom"):
            _raise()
        return Response.json({"error": f"no route {req.path}"}, status=404)

    def on_alarm(self) -> None:
        sqlite.exec("CREATE TABLE IF NOT EXISTS kept (x)")
        sqlite.exec_durable("INSERT INTO kept VALUES (2)")


Handler = export(TrapInfo)
