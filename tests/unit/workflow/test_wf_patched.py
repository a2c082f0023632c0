"""wf.patched(id) and wf.deprecate_patch(id): one class for instances recorded before a
change of the code and after it (core/deterministic.py). History is made with the old code, then
the new code runs on it (a deploy, here a flip of `CODE`)."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
REORDERED = "the code changed the order of its steps"


class Code:
    """The deployed version of a workflow, and what its runs did."""

    def __init__(self) -> None:
        self.version = 1
        self.answers: list[bool] = []  # every answer patched() gave, run after run
        self.ran: list[str] = []  # step functions that really ran

    def step(self, run: Run, name: str) -> Any:
        return run.step(name, lambda: self.ran.append(name) or name)

    def patched(self, run: Run, id: str) -> bool:
        got = run.patched(id)
        self.answers.append(got)
        return got


def _fee_workflow(code: Code) -> Any:
    """v1 charges the old fee; v2 puts the change 'fee' where that step was; v9 drops the
    `if` (the patch removed without retiring it)."""

    def wf(run: Run, _: Any) -> Any:
        code.step(run, "reserve")
        if code.version == 9 or (code.version >= 2 and code.patched(run, "fee")):
            fee = code.step(run, "new fee")
        else:
            fee = code.step(run, "old fee")
        run.wait_for_event("go", DAY)
        return fee

    return wf


def _steps(host: FakeHost, id: str) -> list[tuple[int, str, str]]:
    return host.instance("w", id).backend.rows(
        "SELECT pos, kind, name FROM _wk_wf_step ORDER BY pos")


def _go(host: FakeHost, id: str) -> Any:
    c = host.client("w")
    c.send_event(id, "go", None)
    host.run_due()
    return c.status(id)


def test_a_new_instance_takes_the_new_branch_and_records_it(any_host: FakeHost) -> None:
    code = Code()
    code.version = 2
    any_host.serve("w", _fee_workflow(code))
    any_host.client("w").start("new")
    any_host.run_due()
    s = _go(any_host, "new")
    assert (s.state, s.output) == ("completed", "new fee"), s.error
    assert _steps(any_host, "new") == [(0, "S", "reserve"), (1, "V", "fee"),
                                        (2, "S", "new fee"), (3, "E", "go")]
    assert len(code.answers) >= 2 and set(code.answers) == {True}  # every run said True
    assert code.ran == ["reserve", "new fee"]


def test_an_instance_recorded_before_the_change_keeps_the_old_branch(
        any_host: FakeHost) -> None:
    code = Code()
    any_host.serve("w", _fee_workflow(code))
    any_host.client("w").start("old")
    any_host.run_due()  # recorded by v1: reserve, old fee, waiting for 'go'
    code.version = 2
    any_host.client("w").start("new")
    any_host.run_due()
    old, new = _go(any_host, "old"), _go(any_host, "new")
    assert (old.state, old.output) == ("completed", "old fee"), old.error
    assert (new.state, new.output) == ("completed", "new fee"), new.error
    # No position taken by a False: the old history is unchanged, with no marker.
    assert _steps(any_host, "old") == [(0, "S", "reserve"), (1, "S", "old fee"), (2, "E", "go")]
    assert code.ran == ["reserve", "old fee", "reserve", "new fee"]  # nothing ran twice


def test_the_answer_is_the_same_on_every_replay(any_host: FakeHost) -> None:
    code = Code()
    any_host.serve("w", _fee_workflow(code))
    c = any_host.client("w")
    c.start("old")
    any_host.run_due()
    code.version = 2
    for _ in range(3):  # events that wake it without moving it: each run replays
        c.send_event("old", "noise", None)
        any_host.run_due()
    assert c.status("old").state == "waiting"
    assert _go(any_host, "old").output == "old fee"
    assert len(code.answers) == 4 and set(code.answers) == {False}


def test_an_old_instance_in_a_step_or_wait_where_the_change_is_answers_false(
        any_host: FakeHost) -> None:
    code = Code()
    flaky = {"fails": 1}

    def wf(run: Run, _: Any) -> Any:
        if code.version >= 2 and code.patched(run, "audit"):
            code.step(run, "audit")

        def pay() -> str:
            if flaky["fails"]:
                flaky["fails"] -= 1
                raise RuntimeError("busy")
            return "paid"

        paid = run.step("pay", pay)
        run.wait_for_event("go", DAY)
        return paid

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()  # v1: 'pay' failed once, its retry pending at position 0
    assert _steps(any_host, "1") == [(0, "p", "pay")]
    code.version = 2
    any_host.advance(1000)  # the retry, under v2: position 0 is the old code's step
    s = _go(any_host, "1")
    assert (s.state, s.output) == ("completed", "paid"), s.error
    assert set(code.answers) == {False} and "audit" not in code.ran


def test_an_old_instance_that_reaches_the_change_later_takes_the_new_branch(
        any_host: FakeHost) -> None:
    code = Code()

    def wf(run: Run, _: Any) -> Any:
        code.step(run, "reserve")
        run.wait_for_event("go", DAY)
        if code.version >= 2 and code.patched(run, "receipt"):
            return code.step(run, "mail the receipt")
        return "no receipt"

    any_host.serve("w", wf)
    any_host.client("w").start("1")
    any_host.run_due()  # waiting for 'go' (v1): the change comes after its history
    code.version = 2
    s = _go(any_host, "1")
    assert (s.state, s.output) == ("completed", "mail the receipt"), s.error
    assert _steps(any_host, "1")[2] == (2, "V", "receipt")


def test_the_first_answer_holds_for_the_rest_of_the_run(any_host: FakeHost) -> None:
    code = Code()

    def wf(run: Run, _: Any) -> Any:
        first = code.step(run, "old" if not run.patched("two-sites") else "new")
        run.wait_for_event("go", DAY)
        second = run.patched("two-sites")  # past the journal, but the change said False
        return [first, second]

    # The old code, as recorded: 'old' at position 0 (its patched() answered from no
    # marker). Made by hand: the point is a second site after the first one said False.
    def v1(run: Run, _: Any) -> Any:
        first = code.step(run, "old")
        run.wait_for_event("go", DAY)
        return [first, False]

    fns = {"fn": v1}
    any_host.serve("w", lambda run, inp: fns["fn"](run, inp))
    c = any_host.client("w")
    c.start("old")
    any_host.run_due()
    fns["fn"] = wf
    c.start("new")
    any_host.run_due()
    assert _go(any_host, "old").output == ["old", False]
    assert _go(any_host, "new").output == ["new", True]
    assert [k for _, k, _ in _steps(any_host, "new")] == ["V", "S", "E"]  # one marker


def test_a_marker_of_another_change_is_not_this_ones(any_host: FakeHost) -> None:
    code = Code()

    def wf(run: Run, _: Any) -> Any:
        b = code.version >= 3 and run.patched("b")
        a = run.patched("a")
        run.wait_for_event("go", DAY)
        return [a, b]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()  # v1 and v2 record the marker of 'a' at position 0
    code.version = 3  # 'b' comes before it: this history predates 'b'
    assert _go(any_host, "1").output == [True, False]


def test_a_retired_patch_passes_over_the_markers_of_new_instances(any_host: FakeHost) -> None:
    code = Code()
    code.version = 2

    def wf(run: Run, _: Any) -> Any:
        code.step(run, "reserve")
        if code.version == 2:
            fee = code.step(run, "new fee" if code.patched(run, "fee") else "old fee")
        else:  # v3: every running instance has the change: keep the new branch only
            run.deprecate_patch("fee")
            fee = code.step(run, "new fee")
        run.wait_for_event("go", DAY)
        return fee

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("marked")
    any_host.run_due()
    code.version = 3
    c.start("later")
    any_host.run_due()
    assert _go(any_host, "marked").output == "new fee"
    assert _go(any_host, "later").output == "new fee"
    assert [k for _, k, _ in _steps(any_host, "later")] == ["S", "S", "E"]  # no marker
    assert code.ran.count("new fee") == 2


def test_removing_a_patch_that_instances_hold_is_a_reorder_naming_it(
        any_host: FakeHost) -> None:
    code = Code()
    code.version = 2
    any_host.serve("w", _fee_workflow(code))
    any_host.client("w").start("1")
    any_host.run_due()  # reserve, the marker of 'fee', new fee
    code.version = 9
    s = _go(any_host, "1")
    assert s.error is not None and s.error.startswith(
        f"{REORDERED}: position 1 was recorded as wf.patched('fee') (a patch marker: where "
        "the code no longer asks wf.patched('fee'), keep wf.deprecate_patch('fee') until "
        "no running instance holds the marker), and the code now reaches step 'new fee'")
    assert s.state not in ("running", "waiting", "completed")


def test_a_retired_patch_does_not_rescue_an_instance_that_predates_it(
        any_host: FakeHost) -> None:
    code = Code()

    def wf(run: Run, _: Any) -> Any:
        code.step(run, "reserve")
        if code.version == 1:
            code.step(run, "old fee")
        else:
            run.deprecate_patch("fee")
            code.step(run, "new fee")
        return run.wait_for_event("go", DAY)

    any_host.serve("w", wf)
    any_host.client("w").start("1")
    any_host.run_due()
    code.version = 3  # retired too early: the reorder check is the backstop
    s = _go(any_host, "1")
    assert s.error is not None and "recorded as step 'old fee', and the code now " \
        "reaches step 'new fee'" in s.error
    assert "new fee" not in code.ran


@pytest.mark.parametrize("bad", ["", 42, "a\nb", "x" * 257])
def test_a_change_id_that_is_not_a_name_is_a_mistake_in_the_code(bad: Any,
                                                                  host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.patched(bad))
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.error is not None and s.error.startswith(f"wf.patched({bad!r}): ")
    assert s.state not in ("running", "waiting", "completed")
