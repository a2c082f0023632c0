"""A workflow class whose steps end their events the hard ways, for the trap-reason
tests: its input says how.

    {"spin": true}    the step loops until its CPU budget cuts the event
    {"exit": N}       the step calls sys.exit(N)
    {"abort": true}   the step raises a BaseException the runner lets through: the guest
                      prints its traceback, then traps
    {"mistake": K}    a mistake in the code: K is "option" (an unknown step option),
                      "type" (backoff_ms="10s") or "sleep" (a negative sleep)
    anything else     the step returns "ok"
"""

from __future__ import annotations

import sys
from typing import Any

from wkguest import workflow


class Abort(BaseException):
    """Not an Exception: no step catches it."""


def _spin() -> None:
    while True:
        pass


def _run(inp: Any) -> str:
    if inp.get("spin"):
        _spin()
    if "exit" in inp:
        sys.exit(int(inp["exit"]))
    if inp.get("abort"):
        raise Abort("wf_traps: abort requested")
    return "ok"


def cut(wf: workflow.Run, inp: Any) -> Any:
    mistake = inp.get("mistake")
    if mistake == "option":
        return wf.step("work", lambda: _run(inp), timeout_secs=10)  # type: ignore[call-arg]
    if mistake == "type":
        return wf.step("work", lambda: _run(inp), backoff_ms="10s")  # type: ignore[typeddict-item]
    if mistake == "sleep":
        wf.sleep("nap", -5000)
    return wf.step("work", lambda: _run(inp), attempts=2, backoff_ms=1000)


Handler = workflow.serve(cut, workflow.Config(retention_ms=3_600_000))
