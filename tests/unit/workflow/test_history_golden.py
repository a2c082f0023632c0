"""The golden history golden/history_v1.json: instances recorded with the runner as it was
before the replay core's kinds were named (one workflow, every kind of `_wk_wf_step` row),
which every later runner must replay the same way without running a recorded step again.

Regenerate with WK_REGEN_GOLDEN=1 only for a deliberate change of the stored format (then
review the diff). Its histories, all of `golden_v1`:

- completes: waiting for 'ship', which has arrived: every final kind (S, T, X after
  retries and NonRetryable, Z by sleep and sleep_until, E, F, O) and a pending wait (q).
  Replayed, it completes with EXPECTED.
- retrying: step 'flaky' failed its first attempt, its backoff pending (p). Replayed
  before the backoff ends, it keeps waiting for it.
- sleeping: in sleep 'cool-off' (w) whose wake time has passed. Replayed, it passes the
  sleep and goes to sleep until UNTIL, a new position.
- cut: every attempt of step 'flaky' trapped (p, attempts used up). Replayed, the step
  fails for good and so does the workflow.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from wkguest.workflow import Config, NonRetryable, Run
from wkguest.workflow.runner import Runner
from wkguest.workflow.testing import FakeHost, Trap, export_history, seed, status_of
from wkguest.workflow.testing.fakes import START_MS

GOLDEN = Path(__file__).parent / "golden" / "history_v1.json"
DAY = 86_400_000
UNTIL = START_MS + 3_600_000  # sleep_until's time: after 'cool-off' ends, before a day
RECORDING = {"on": False}  # step functions run only while recording
CALLED_ON_REPLAY: list[str] = []
ATTEMPTS: dict[str, int] = {}  # step key → attempts made (while recording)
STEP_KINDS = ("S", "T", "X", "p")  # the stored letters of a step's rows (the format)


def live(name: str, value: Any) -> Any:
    def f(*args: Any) -> Any:
        if not RECORDING["on"]:
            CALLED_ON_REPLAY.append(name)
            raise AssertionError(f"recorded step {name!r} ran again on replay")
        return value(*args) if callable(value) else value
    return f


def flaky(trap: bool) -> Any:
    def f(key: str) -> Any:
        n = ATTEMPTS[key] = ATTEMPTS.get(key, 0) + 1
        if trap:
            raise Trap(f"flaky attempt {n} traps")
        if n < 3:
            raise RuntimeError(f"flaky attempt {n}")
        return {"attempt": n}
    return f


def always_fails() -> Any:
    raise ValueError("the ledger is closed")


def declined() -> Any:
    raise NonRetryable("card declined")


def golden_v1(run: Run, inp: Any) -> Any:
    plain = run.step("plain", live("plain", {"item": inp["item"], "qty": 2}))
    tagged = run.step("tagged", live("tagged", b"\x00\x01%PDF"))
    position = run.step_keyed("keyed", live("keyed", lambda key: key.split("-")[-1]))
    retried = run.step_keyed("flaky", live("flaky", flaky(inp.get("trap", False))),
                             attempts=3, backoff_ms=1000)
    exhausted = run.try_step("exhausted", live("exhausted", always_fails), attempts=2,
                             backoff_ms=500)
    refused = run.try_step("declined", live("declined", declined))
    run.sleep("cool-off", 60_000)
    run.sleep_until("until", UNTIL)
    approval = run.wait_for_event("approved", DAY)
    label = run.wait_for_event("label", DAY)
    nudge = run.wait_for_event("nudge", 1000)
    ship = run.wait_for_event("ship", DAY)
    return {"plain": plain, "tagged": tagged, "position": position, "retried": retried,
            "exhausted": [exhausted.ok, exhausted.error, exhausted.attempts],
            "declined": [refused.ok, refused.error, refused.attempts],
            "approval": approval, "label": label, "nudge": nudge, "ship": ship}


EXPECTED = {"plain": {"item": "book", "qty": 2}, "tagged": b"\x00\x01%PDF", "position": "2",
            "retried": {"attempt": 3},
            "exhausted": [False, "ValueError: the ledger is closed", 2],
            "declined": [False, "card declined", 1],
            "approval": {"by": "ann"}, "label": b"\x00label", "nudge": None, "ship": "now"}


def record() -> dict[str, Any]:
    """Record the four histories with today's runner, as the module docstring says."""
    ATTEMPTS.clear()
    RECORDING["on"] = True
    try:
        host = FakeHost()
        host.serve("orders", golden_v1)
        c = host.client("orders")
        out: dict[str, Any] = {}
        c.start("o1", {"item": "book"})
        host.run_due()
        out["retrying"] = _export(host, "o1", "step 'flaky' failed attempt 1; backoff pending")
        host.advance(1000)
        host.advance(2000)
        host.advance(500)
        host.clock.jump(60_000)  # past the sleep's wake time, its alarm not yet fired
        out["sleeping"] = _export(host, "o1", "in sleep 'cool-off', its wake time passed")
        host.run_due()
        host.advance(UNTIL - host.clock.now())
        c.send_event("o1", "approved", {"by": "ann"})
        c.send_event("o1", "label", b"\x00label")
        host.run_due()
        host.advance(1000)
        assert c.status("o1").waiting_for == ("ship",)
        c.send_event("o1", "ship", "now")
        out["completes"] = _export(host, "o1", "waiting for 'ship', which has arrived")
        c.start("o2", {"item": "book", "trap": True})
        for _ in range(3):
            host.run_due()
            host.clock.jump(4000)
        out["cut"] = _export(host, "o2", "every attempt of step 'flaky' trapped")
        return out
    finally:
        RECORDING["on"] = False


def _export(host: FakeHost, id: str, note: str) -> dict[str, Any]:
    return export_history(host.instance("orders", id).backend, note)


def _golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return doc


def _replay(name: str) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """Replay one golden history on a fresh runner: (status, history, steps after)."""
    doc = _golden()["histories"][name]
    CALLED_ON_REPLAY.clear()
    backend = seed(doc)
    runner = Runner(golden_v1, Config(), backend)
    runner.on_alarm()
    status = status_of(runner)
    steps = export_history(backend)["steps"]  # as the golden keeps them
    return status, doc, steps


def _assert_no_step_ran(doc: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    assert CALLED_ON_REPLAY == []
    recorded = {row["pos"]: row for row in doc["steps"]}
    for row in steps:
        before = recorded.get(row["pos"])
        if before is not None and before["kind"] not in ("p", "w", "q"):
            assert row == before  # a final entry never changes
        elif before is None:
            assert row["kind"] not in STEP_KINDS, row  # only sleeps and waits are new


def test_the_golden_file_is_what_todays_runner_records() -> None:
    """The stored format has not changed: recorded again today, the rows are the same."""
    doc = {"note": "wk-workflow histories of golden_v1, recorded before the replay core's "
                   "kinds were named (tests/unit/workflow/test_history_golden.py)",
           "histories": record()}
    if os.environ.get("WK_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    golden = _golden()
    for name, history in doc["histories"].items():
        kept = golden["histories"][name]
        assert _with_run_id(history, kept["instance"]["run_id"]) == kept, name


def _with_run_id(doc: dict[str, Any], run_id: str) -> dict[str, Any]:
    text = json.dumps(doc).replace(doc["instance"]["run_id"], run_id)
    return dict(json.loads(text))


def test_the_golden_history_covers_every_kind() -> None:
    kinds = {row["kind"] for h in _golden()["histories"].values() for row in h["steps"]}
    assert kinds == set("STXZEFOpwq")


def test_a_completed_history_replays_to_the_same_output() -> None:
    status, doc, steps = _replay("completes")
    assert status.state == "completed", status.error
    assert status.output == EXPECTED
    assert status.positions == 12
    _assert_no_step_ran(doc, steps)


def test_a_step_in_backoff_keeps_waiting_for_it() -> None:
    status, doc, steps = _replay("retrying")
    pending = doc["steps"][-1]
    assert (pending["kind"], pending["attempts"]) == ("p", 1)
    assert status.state == "running", status.error
    assert status.wake_at == pending["next_attempt_at"]
    assert status.positions == 4
    assert steps == doc["steps"]
    _assert_no_step_ran(doc, steps)


def test_a_sleep_past_its_wake_time_goes_on_to_the_next_sleep() -> None:
    status, doc, steps = _replay("sleeping")
    assert doc["steps"][-1]["kind"] == "w"
    assert status.state == "waiting", status.error
    assert (status.wake_at, status.waiting_for) == (UNTIL, ())
    assert status.positions == 8
    assert steps[6]["wake_at"] == doc["steps"][6]["wake_at"]  # the recorded wake time
    _assert_no_step_ran(doc, steps)


def test_a_step_whose_every_attempt_was_cut_fails_the_workflow() -> None:
    status, doc, steps = _replay("cut")
    pending = doc["steps"][-1]
    assert (pending["kind"], pending["attempts"]) == ("p", 3)
    assert status.state == "failed"
    assert status.error is not None and "'flaky'" in status.error
    assert pending["error"] in status.error
    assert steps[-1]["kind"] == "X"
    assert json.loads(steps[-1]["result"]) == [pending["error"], 3]
    _assert_no_step_ran(doc, steps)
