"""The workflow class of the stored-data fixture (README.md beside it): one function served
as the class `stored`, whose input's "case" picks what an instance does. make_data.py
stopped one instance of each case mid-flight, with the runner of commit 9401b45, and
tests/e2e/test_stored_data_replays.py drives them to their ends with today's runner.

    steps     plain, tagged (bytes, a str starting with NUL, nested) and edge values
              (ints at +-2**64, floats with nan and infinities), a keyed step, a failed
              try_step, a tx step, now/random/uuid, a patch marker; then sleeps an hour
    retry     a step whose first two attempts raise (backoff 1 s, then 2 s)
    cut       a step whose first attempt exits the guest (a trap: the host cuts the event)
    wait      takes the event "note" (bytes), waits for "approve", then takes "later"
    group     a settled wf.all, then an open wf.all_settled over a step that returned, a
              step in backoff, a step declined, a wait, a sleep and a child; then wf.any
              racing the event "approve" against a sleep
    parent    a step, then the child {"case": "kid"} (its id in the input), awaited
    kid       a step, then waits for the event "release"
    saga      tx steps booking entries, each with a compensation (those named in
              "flaky" fail their first attempt); with "wait", waits for "go"; then a
              step declined for good: the compensations run, newest first
    emit      emits around a step, waits for "ship", emits again
    chain     a step and an emit per run, a 1 s rest, continue-as-new until run 3
    pause     a step, an hour's sleep, a step (an operator pauses it in its sleep)

Changing this file changes what the fixture's instances replay: keep it as it is (a new
fixture gets a new directory).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from wkguest import workflow

CLS = "stored"
SECOND = 1000
HOUR = 3_600_000
DAY = 86_400_000

BOOKS = workflow.Tables("""
    CREATE TABLE IF NOT EXISTS books (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL,
                                      delta INTEGER NOT NULL)
""")
EDGES = [2**64 - 1, -(2**64), 0.1, math.inf, -math.inf, math.nan, "é☃", None, True]


def _declined() -> Any:
    raise workflow.NonRetryable("card declined")


def _book(entry: str, delta: int) -> Callable[[workflow.TxDb], Any]:
    def book(db: workflow.TxDb) -> Any:
        db.exec("INSERT INTO books (entry, delta) VALUES (?, ?)", (entry, delta))
        return db.scalar("SELECT sum(delta) FROM books")
    return book


def _flaky(wf: workflow.Run, fails: int, value: Any) -> Callable[..., Any]:
    """A function whose first `fails` attempts raise; then it returns `value` (or, for a
    tx step's function, whatever `value(db)` returns)."""
    def f(*args: Any) -> Any:
        n = wf.step_context.attempt
        if n <= fails:
            raise RuntimeError(f"{wf.step_context.name} attempt {n}")
        return value(*args) if callable(value) else value
    return f


def steps(wf: workflow.Run, inp: Any) -> Any:
    plain = wf.step("plain", lambda: {"item": inp["item"], "qty": 2})
    raw = wf.step("bytes", lambda: b"\x00\x01%PDF")
    nul = wf.step("nul", lambda: "\x00 starts with NUL")
    nested = wf.step("nested", lambda: {"b": [b"x", "\x00s", {"deep": b""}], "n": 1})
    edges = wf.step("edges", lambda: EDGES)
    key = wf.step_keyed("keyed", lambda k: k)
    declined = wf.try_step("declined", _declined)
    booked = wf.step("book", _book("steps", 5), tx=BOOKS)
    now, rnd, uid = wf.now(), wf.random(), wf.uuid()
    patched = wf.patched("fee-v2")
    wf.sleep("nap", HOUR)
    return {"plain": plain, "bytes": raw, "nul": nul, "nested": nested, "edges": edges,
            "key": key, "declined": [declined.ok, declined.error, declined.attempts],
            "booked": booked, "now": now, "random": rnd, "uuid": uid, "patched": patched}


def retry(wf: workflow.Run, inp: Any) -> Any:
    return wf.step("flaky", _flaky(wf, 2, {"done": True}), attempts=5, backoff_ms=SECOND)


def cut(wf: workflow.Run, inp: Any) -> Any:
    def fragile() -> Any:
        if wf.step_context.attempt == 1:
            raise SystemExit(1)  # the guest exits: a trap, and the event is cut
        return "survived"
    return wf.step("fragile", fragile, backoff_ms=SECOND)


def wait(wf: workflow.Run, inp: Any) -> Any:
    note = wf.wait_for_event("note", DAY)
    approve = wf.wait_for_event("approve", DAY)
    later = wf.wait_for_event("later", DAY)
    return {"note": note, "approve": approve, "later": later}


def group(wf: workflow.Run, inp: Any) -> Any:
    fan = wf.all([workflow.Step("a", lambda: "A"), workflow.Step("b", lambda: b"\x00B")])
    settled = wf.all_settled([
        workflow.Step("ok", lambda: 1),
        workflow.Step("flaky", _flaky(wf, 1, "F"), backoff_ms=SECOND),
        workflow.Step("bad", _declined),
        workflow.Wait("go", DAY),
        workflow.Sleep("nap", HOUR),
        workflow.Child(CLS, inp["kid"], {"case": "kid"}),
    ])
    won = wf.any([workflow.Wait("approve", DAY), workflow.Sleep("give up", 2 * DAY)])
    return {"fan": fan, "settled": [[r.ok, r.value, r.error] for r in settled],
            "won": [won.index, won.value]}


def parent(wf: workflow.Run, inp: Any) -> Any:
    before = wf.step("before", lambda: "b")
    got = wf.child(CLS, inp["kid"], {"case": "kid"})
    return {"before": before, "child": got}


def kid(wf: workflow.Run, inp: Any) -> Any:
    k = wf.step("k", lambda: "k")
    return {"k": k, "release": wf.wait_for_event("release", DAY)}


def saga(wf: workflow.Run, inp: Any) -> Any:
    for entry, amount in inp["entries"]:
        fails = 1 if entry in inp.get("flaky", ()) else 0
        undo = workflow.Compensation(_flaky(wf, fails, _book(entry, -amount)), tx=BOOKS,
                                     backoff_ms=SECOND)
        wf.step(f"book {entry}", _book(entry, amount), tx=BOOKS, compensate=undo)
    if inp.get("wait"):
        wf.wait_for_event("go", DAY)
    wf.step("charge", _declined)
    return "never"


def emit(wf: workflow.Run, inp: Any) -> Any:
    wf.emit("started", {"item": inp["item"]})
    packed = wf.step("pack", lambda: "packed")
    wf.emit("packed", b"\x00box")
    by = wf.wait_for_event("ship", DAY)
    wf.emit("shipped", {"by": by})
    return {"packed": packed, "by": by}


def chain(wf: workflow.Run, inp: Any) -> Any:
    run = int(inp.get("run", 1))
    total = int(inp.get("total", 0)) + wf.step(f"round {run}", lambda: run * 10)
    wf.emit("round", {"run": run, "total": total})
    if run < 3:
        wf.sleep("rest", SECOND)
        wf.continue_as_new({**inp, "run": run + 1, "total": total})
    return {"runs": run, "total": total}


def pause(wf: workflow.Run, inp: Any) -> Any:
    first = wf.step("first", lambda: 1)
    wf.sleep("nap", HOUR)
    return {"first": first, "second": wf.step("second", lambda: 2)}


CASES: dict[str, Callable[[workflow.Run, Any], Any]] = {
    "steps": steps, "retry": retry, "cut": cut, "wait": wait, "group": group,
    "parent": parent, "kid": kid, "saga": saga, "emit": emit, "chain": chain,
    "pause": pause,
}


def stored(wf: workflow.Run, inp: Any) -> Any:
    return CASES[inp["case"]](wf, inp)


Handler = workflow.serve(stored, workflow.Config(retention_ms=7 * DAY))
