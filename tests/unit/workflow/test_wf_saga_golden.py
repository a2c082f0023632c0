"""Old journals and compensation: golden/history_v1.json was recorded before compensate=
existed. Its histories replay as they always did under the code that recorded them, and
under a deploy that adds compensations to the same steps, a live instance that then fails
runs them after its recorded positions, which stay as recorded."""

from __future__ import annotations

import json
from typing import Any

from wkguest.workflow import Compensation, Config, Run
from wkguest.workflow.runner import Runner
from wkguest.workflow.testing import export_history, seed, status_of

from .test_history_golden import CALLED_ON_REPLAY, EXPECTED, _golden, flaky, golden_v1, live

UNDONE: list[str] = []


def with_compensations(run: Run, inp: Any) -> Any:
    """golden_v1's first four positions, the steps now carrying compensations."""
    run.step("plain", live("plain", {"item": inp["item"], "qty": 2}),
             compensate=lambda: UNDONE.append("plain"))
    run.step("tagged", live("tagged", b"\x00\x01%PDF"))
    run.step_keyed("keyed", live("keyed", lambda key: key.split("-")[-1]),
                   compensate=Compensation(lambda: UNDONE.append("keyed"), attempts=2))
    run.step_keyed("flaky", live("flaky", flaky(inp.get("trap", False))), attempts=3,
                   backoff_ms=1000)
    return golden_v1(run, inp)  # not reached by the histories replayed here


def _replay(name: str, fn: Any) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    doc = _golden()["histories"][name]
    CALLED_ON_REPLAY.clear()
    UNDONE.clear()
    backend = seed(doc)
    Runner(fn, Config(), backend).on_alarm()
    steps = export_history(backend)["steps"]  # as the golden keeps them
    return status_of(Runner(fn, Config(), backend)), doc["steps"], steps


def test_old_histories_replay_unchanged_by_the_saga() -> None:
    status, recorded, steps = _replay("completes", golden_v1)
    assert (status.state, status.output) == ("completed", EXPECTED)
    status, recorded, steps = _replay("cut", golden_v1)
    assert status.state == "failed" and "compensat" not in (status.error or "")
    assert [s["name"] for s in steps] == [s["name"] for s in recorded]
    assert CALLED_ON_REPLAY == []


def test_a_deploy_that_adds_compensations_compensates_an_old_instance_that_fails() -> None:
    status, recorded, steps = _replay("cut", with_compensations)
    assert status.state == "failed", status.error
    assert "'flaky'" in (status.error or "")
    assert "(compensated: 2 compensation(s) ran)" in (status.error or "")
    assert UNDONE == ["keyed", "plain"]
    assert CALLED_ON_REPLAY == []  # no recorded step ran again
    assert steps[:3] == recorded[:3]  # the final entries never change
    assert [(s["pos"], s["kind"], s["name"]) for s in steps[3:]] == [
        (3, "X", "flaky"), (4, "S", "compensate:keyed"), (5, "S", "compensate:plain")]
    assert json.loads(steps[4]["result"]) is None
