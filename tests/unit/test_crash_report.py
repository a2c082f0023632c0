"""The crash-point harness's rules, on runs made by hand: what passes (the same end, a
step run once more only where the kill fell), what fails (another output, an effect
lost, an extra run elsewhere, a kill never reached), and the events script's parsing."""

from __future__ import annotations

import pytest
from wkhost.testkit.crash_report import Boundary, RunResult, StepKey, verdict
from wkhost.testkit.crash_script import Entry, ScriptError, parse_script

A, B = StepKey(0, None, "reserve"), StepKey(3, None, "charge")
BOUND = Boundary("sql-before:wk:result", 1, "a step's function returned")


def clean() -> RunResult:
    return RunResult(None, state="completed", output={"charge": "ch-1", "n": 1},
                     runs={A: 1, B: 2})


def run(**kw: object) -> RunResult:
    base = {"killed": True, "state": "completed", "output": {"charge": "ch-1", "n": 1},
            "runs": {A: 1, B: 2}, "in_flight": {3}}
    return RunResult(BOUND, **{**base, **kw})  # type: ignore[arg-type]


def test_the_same_end_passes_and_one_more_run_where_the_kill_fell_is_at_least_once() -> None:
    assert verdict(clean(), run()).ok
    r = verdict(clean(), run(runs={A: 1, B: 3}))
    assert r.ok and r.at_least_once == B
    assert "3 charge ran once more (at-least-once)" in r.line()


def test_an_extra_run_elsewhere_or_two_more_fails() -> None:
    r = verdict(clean(), run(runs={A: 2, B: 2}))
    assert r.problems == ["step 0 reserve ran 1× more than in the clean run"]
    r = verdict(clean(), run(runs={A: 1, B: 4}))
    assert r.problems == ["step 3 charge ran 2× more than in the clean run (the kill fell "
                          "inside it)"]


def test_a_run_fewer_is_an_effect_lost() -> None:
    r = verdict(clean(), run(runs={A: 1, B: 1}))
    assert r.problems == ["step 3 charge ran 1×, 2× in the clean run: an effect lost"]


def test_another_output_names_the_keys_that_differ() -> None:
    r = verdict(clean(), run(output={"charge": "ch-1", "n": 2}))
    assert r.problems == ['its output differs: "n": 2 (clean run: 1)']
    r = verdict(clean(), run(state="failed", output=None, error="boom"))
    assert r.problems[0].startswith("it ended failed with error 'boom'; the clean run ended "
                                    "completed with output")


def test_a_kill_that_never_came_fails_and_a_stuck_run_keeps_its_own_problem() -> None:
    r = verdict(clean(), run(killed=False))
    assert r.problems == ["the kill never came: this run did not reach the boundary (is "
                          "the workflow deterministic?)"]
    stuck = run(problems=["stuck: it stays waiting"])
    assert verdict(clean(), stuck).problems == ["stuck: it stays waiting"]


def test_a_script_is_a_list_of_events_and_clock_moves() -> None:
    assert parse_script([{"event": "approved", "payload": {"by": "ann"}},
                         {"advance": "2h"}, {"event": "shipped"}]) == [
        Entry("approved", {"by": "ann"}), Entry(advance_ms=7_200_000), Entry("shipped")]
    for bad, says in [({"event": "x"}, "a JSON list of entries, got dict"),
                      ([1], "entry 0: an object, got 1"),
                      ([{"event": "x", "extra": 1}], 'entry 0: {"event": NAME'),
                      ([{"advance": "soon"}], "advance"),
                      ([{"advance": -5}], "advance")]:
        with pytest.raises(ScriptError, match=says.replace("(", r"\(")):
            parse_script(bad)
