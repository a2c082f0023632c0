"""Each failed attempt's traceback (core/tracebacks.py): kept with its history row,
starting at the workflow's own code, bounded, shown by the steps route with `attempts`;
nothing for a returned attempt, and no table for an instance whose steps never failed."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from wkguest.workflow import NonRetryable, Run
from wkguest.workflow.core import tracebacks
from wkguest.workflow.testing import FakeHost

from .conftest import run_one
from .test_wf_attempts import raw_any, steps  # noqa: F401 (a fixture)


def _charge(n: int) -> str:
    if n < 3:
        raise ConnectionError(f"refused {n}")
    return "ok"


def test_a_failed_attempt_keeps_its_traceback_from_the_workflows_own_code(
        any_host: FakeHost, raw_any: Any) -> None:  # noqa: F811
    tries = {"n": 0}

    def flaky() -> str:
        tries["n"] += 1
        return _charge(tries["n"])

    st = run_one(any_host, lambda run, _: run.step("charge", flaky, attempts=5,
                                                   backoff_ms=10), 4, 100)
    assert st.output == "ok"
    h = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert [a["outcome"] for a in h] == ["failed", "failed", "returned"]
    assert h[2]["traceback"] is None
    for a, n in zip(h[:2], (1, 2), strict=True):
        lines = a["traceback"].splitlines()
        assert lines[0] == "Traceback (most recent call last):", lines
        assert "in flaky" in lines[1], lines  # the runner's frames above it left out
        assert any("in _charge" in ln for ln in lines), lines
        assert lines[-1] == f"ConnectionError: refused {n}", lines
        assert "wkguest" not in a["traceback"]


def test_a_non_retryable_failure_keeps_its_traceback(any_host: FakeHost,
                                                     raw_any: Any) -> None:  # noqa: F811
    def refuse() -> None:
        raise NonRetryable("card declined")

    def wf(run: Run, _: Any) -> Any:
        try:
            run.step("charge", refuse, attempts=3)
        except Exception as e:  # noqa: BLE001 (the step's final error)
            return str(e)
        return None

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    (a,) = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert a["outcome"] == "failed" and "in refuse" in a["traceback"], a
    assert a["traceback"].rstrip().endswith("card declined"), a["traceback"]


def test_a_workflow_whose_steps_never_failed_has_no_traceback_table(
        any_host: FakeHost, raw_any: Any) -> None:  # noqa: F811
    any_host.serve("w", lambda run, _: run.step("one", lambda: 1))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").output == 1
    (st,) = steps(any_host, raw_any, attempts=True)
    assert st["history"][0]["traceback"] is None
    conn = any_host.instance("w", "1").backend.conn
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tracebacks.TABLE not in names and "_wk_wf_attempt" in names


def test_a_traceback_keeps_its_end_and_an_answer_its_latest_within_a_bound(
        any_host: FakeHost, raw_any: Any) -> None:  # noqa: F811
    def deep() -> None:
        raise ValueError("x" * 10_000)

    def wf(run: Run, _: Any) -> Any:
        for i in range(60):
            with contextlib.suppress(Exception):  # each step fails for good
                run.step(f"s{i}", deep, attempts=1)
        return "done"

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    for _ in range(20):
        any_host.advance(1000)
    assert c.status("1").output == "done"
    page = steps(any_host, raw_any, attempts=True, limit=60)
    shown = [st["history"][0]["traceback"] for st in page]
    kept = [t for t in shown if t is not None]
    assert all(len(t) == tracebacks.MAX_CHARS and t.startswith("…") for t in kept)
    assert all(t.rstrip().endswith("x" * 100) for t in kept)
    # 60 of 8,192 characters are more than an answer holds: the latest are shown.
    assert len(kept) == tracebacks.MAX_PAGE_CHARS // tracebacks.MAX_CHARS
    assert shown[-len(kept):] == kept and shown[0] is None


@pytest.mark.parametrize("text", ["Traceback (most recent call last):\n  File \"x\"\n",
                                  "t" * (tracebacks.MAX_CHARS * 2)])
def test_of_is_bounded(text: str) -> None:
    try:
        raise RuntimeError(text)
    except RuntimeError as e:
        got = tracebacks.of(e)
    assert len(got) <= tracebacks.MAX_CHARS
    assert got.rstrip().endswith(text.rstrip()[-50:])


def test_of_formats_a_chain_notes_and_a_deep_recursion_as_python_does() -> None:
    def inner() -> None:
        raise ConnectionError("refused")

    def deep(n: int) -> None:
        if n == 0:
            raise RecursionError("deep")
        deep(n - 1)

    try:
        try:
            inner()
        except ConnectionError as e:
            e.add_note("while charging")
            raise KeyError("k") from e
    except KeyError as e:
        text = tracebacks.of(e)
    first, second = text.split("\nThe above exception was the direct cause of the "
                               "following exception:\n\n")
    assert first.endswith(", in inner\nConnectionError: refused\nwhile charging\n"), first
    assert second.startswith("Traceback (most recent call last):\n"), second
    assert second.endswith("KeyError: 'k'\n"), second
    try:
        deep(300)
    except RecursionError as e:
        # The frames alone: the whole text is cut at MAX_CHARS too, and where depends on
        # how long this checkout's path is.
        frames = tracebacks._frames(e.__traceback__)
    assert frames[0] == "  [202 outer frames left out]\n"  # the test and 301 deep
    assert len(frames) == 1 + tracebacks.MAX_FRAMES and "in deep" in frames[-1]


def test_a_cut_attempt_keeps_the_traceback_the_guest_reported_as_it_trapped(
        any_host: FakeHost, raw_any: Any) -> None:  # noqa: F811
    from wkguest.workflow.backend import TRAP_GUEST, LastTrap
    from wkguest.workflow.testing import Trap

    tries = {"n": 0}

    def pack() -> str:
        tries["n"] += 1
        if tries["n"] == 1:
            raise Trap("the robot fell over")
        return "parcel"

    any_host.serve("w", lambda run, _: run.step("pack", pack, attempts=3, backoff_ms=10))
    any_host.client("w").start("1")
    any_host.run_due()  # the first attempt traps
    mine = ('Traceback (most recent call last):\n  File "/0/app.py", line 9, in pack\n'
            'SystemExit: x\n')
    runner = f'  File "{tracebacks._SDK_DIR}workflow/core/attempt.py", line 86, in attempt\n'
    reported = mine.replace("  File", runner + "  File", 1)  # the runner's frames first
    any_host.instance("w", "1").backend.trap_info = LastTrap(  # as the host keeps it
        TRAP_GUEST, "the guest raised SystemExit: x", ("SystemExit", "x", reported))
    any_host.advance(100)
    h = steps(any_host, raw_any, attempts=True)[0]["history"]
    assert [(a["outcome"], a["error"], a["traceback"]) for a in h] == [
        ("cut", "the guest raised SystemExit: x", mine), ("returned", None, None)]
