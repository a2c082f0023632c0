"""Groups of branches (wf.all, wf.all_settled, wf.any), on the fake host in both modes:
results by position whatever the order of completion, a failing branch backing off on
its own, all-or-error and all-settled, races whose winner replays, and the mistakes that
park. Seed 004's ParallelTest is the first test."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.workflow import Config, Run, StepFailed
from wkguest.workflow.groups.branches import Child, Sleep, Step, Wait, Won
from wkguest.workflow.testing import FakeHost, Trap

DAY = 86_400_000
RAN: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


def ran(name: str, value: Any = None, fails: int = 0, trap_once: bool = False) -> Any:
    """A step function that counts its runs, fails its first `fails`, traps its first."""
    def f(*args: Any) -> Any:
        RAN[name] += 1
        if trap_once and RAN[name] == 1:
            raise Trap(f"{name} traps")
        if RAN[name] <= fails:
            raise RuntimeError(f"{name} failed attempt {RAN[name]}")
        return name.upper() if value is None else value
    return f


def start(host: FakeHost, fn: Any, config: Config | None = None, inp: Any = None) -> Any:
    host.serve("g", fn, config or Config(attempts=3, backoff_ms=1000))
    c = host.client("g")
    c.start("i", inp)
    host.run_due()
    return c


def stream(c: Any) -> list[str]:
    return [e.name for e in c.events("i")]


# -- seed 004's ParallelTest ---------------------------------------------------------

def parallel_test(wf: Run, _: Any) -> Any:
    wf.step("before", ran("before"))
    wf.emit("BeforeDone")
    a, b = wf.all([Step("branch_a", ran("branch_a")), Step("branch_b", ran("branch_b"))])
    wf.emit("BranchA_Done", a)
    wf.emit("BranchB_Done", b)
    wf.step("after", ran("after"))
    wf.emit("AfterDone")
    return [a, b]


def test_seed_004s_parallel_test(any_host: FakeHost) -> None:
    c = start(any_host, parallel_test)
    s = c.status("i")
    assert (s.state, s.output) == ("completed", ["BRANCH_A", "BRANCH_B"])
    assert stream(c) == ["BeforeDone", "BranchA_Done", "BranchB_Done", "AfterDone"]
    assert RAN == {"before": 1, "branch_a": 1, "branch_b": 1, "after": 1}
    # one position for the group: before, emit, the group, two emits, after, emit
    assert s.positions == 7


# -- order and recovery --------------------------------------------------------------

def mixed(wf: Run, _: Any) -> Any:
    return wf.all([Wait("late", DAY), Step("now", ran("now")), Sleep("nap", 5000),
                   Step("trappy", ran("trappy", trap_once=True))])


def test_results_come_back_in_the_order_given_not_the_order_of_completion(
        any_host: FakeHost) -> None:
    c = start(any_host, mixed)
    assert c.status("i").state == "running"  # the trap's retry of 'trappy' is due in 1 s
    any_host.advance(6000)  # 'trappy' runs again, the sleep passes; the wait still waits
    assert c.status("i").state == "waiting"
    c.send_event("i", "late", {"at": "last"})
    any_host.run_due()
    s = c.status("i")
    assert (s.state, s.output) == ("completed", [{"at": "last"}, "NOW", None, "TRAPPY"])
    # the trap cut the first attempt of 'trappy': it ran again, and 'now' did not
    assert RAN == {"now": 1, "trappy": 2}


def test_a_failing_branch_backs_off_on_its_own_while_the_others_complete(
        any_host: FakeHost) -> None:
    c = start(any_host, lambda wf, _: wf.all([Step("flaky", ran("flaky", fails=2)),
                                              Step("steady", ran("steady"))]))
    s = c.status("i")
    assert s.state == "running" and RAN == {"flaky": 1, "steady": 1}
    any_host.advance(1000)
    assert RAN == {"flaky": 2, "steady": 1}
    any_host.advance(2000)
    s = c.status("i")
    assert (s.state, s.output) == ("completed", ["FLAKY", "STEADY"])
    assert RAN == {"flaky": 3, "steady": 1}


def test_branches_that_wait_wait_together(any_host: FakeHost) -> None:
    c = start(any_host, lambda wf, _: wf.all([Sleep("a", 10_000), Sleep("b", 10_000),
                                              Wait("e", 10_000)]))
    any_host.advance(10_000)  # one span of 10 s for all three, not 30 s
    s = c.status("i")
    assert (s.state, s.output) == ("completed", [None, None, None])


# -- failure semantics ---------------------------------------------------------------

def all_or_error(wf: Run, _: Any) -> Any:
    try:
        wf.all([Wait("never", DAY), Step("doomed", ran("doomed", fails=9), attempts=2)])
    except StepFailed as e:
        return {"failed": e.name, "error": e.error, "attempts": e.attempts}
    return "no failure"


def test_all_raises_the_first_failure_and_abandons_the_rest(any_host: FakeHost) -> None:
    c = start(any_host, all_or_error)
    any_host.advance(1000)
    s = c.status("i")
    assert s.state == "completed"
    assert s.output == {"failed": "doomed", "error": "RuntimeError: doomed failed attempt 2",
                        "attempts": 2}
    assert RAN == {"doomed": 2}


def test_an_uncaught_branch_failure_fails_the_workflow(any_host: FakeHost) -> None:
    c = start(any_host, lambda wf, _: wf.all([Step("x", ran("x", fails=9), attempts=1)]))
    s = c.status("i")
    assert s.state == "failed"
    assert s.error == "step 'x' failed after 1 attempt(s): RuntimeError: x failed attempt 1"


def test_all_settled_reports_each_branch(any_host: FakeHost) -> None:
    def fn(wf: Run, _: Any) -> Any:
        got = wf.all_settled([Step("ok", ran("ok")), Step("bad", ran("bad", fails=9),
                                                          attempts=1), Wait("w", 0)])
        return [[r.ok, r.value, r.error, r.attempts] for r in got]

    c = start(any_host, fn)
    s = c.status("i")
    assert (s.state, s.output) == ("completed", [
        [True, "OK", None, 0], [False, None, "RuntimeError: bad failed attempt 1", 1],
        [True, None, None, 0]])


# -- races ---------------------------------------------------------------------------

def race(wf: Run, _: Any) -> Any:
    won = wf.any([Wait("approved", DAY), Sleep("deadline", 60_000)])
    later = wf.wait_for_event("approved", DAY)  # the loser's wait took nothing
    return {"won": list(won), "later": later}


def test_an_event_beats_the_timer(any_host: FakeHost) -> None:
    c = start(any_host, race)
    c.send_event("i", "approved", "first")
    c.send_event("i", "approved", "second")
    any_host.run_due()
    s = c.status("i")
    assert s.output == {"won": [0, "first"], "later": "second"}


def test_the_timer_beats_the_event_and_the_event_stays_for_a_later_wait(
        any_host: FakeHost) -> None:
    c = start(any_host, race)
    any_host.advance(60_000)
    c.send_event("i", "approved", "too late for the race")
    any_host.run_due()
    s = c.status("i")
    assert s.output == {"won": [1, None], "later": "too late for the race"}


def test_the_winner_is_recorded_and_replay_picks_it(any_host: FakeHost) -> None:
    picks: list[Any] = []

    def fn(wf: Run, _: Any) -> Any:
        won = wf.any([Step("slow", ran("slow", fails=1)), Step("fast", ran("fast"))])
        picks.append(tuple(won))
        wf.sleep("then", 1000)
        return list(won)

    c = start(any_host, fn)
    any_host.advance(5000)
    s = c.status("i")
    assert s.output == [1, "FAST"]
    assert set(picks) == {(1, "FAST")} and len(picks) >= 2  # replayed, same winner
    assert RAN == {"slow": 1, "fast": 1}  # the loser is never attempted again
    assert Won(1, "FAST") == Won(*Won(1, "FAST"))


# -- keys, nesting, budget -----------------------------------------------------------

def test_a_keyed_branch_gets_its_own_key(any_host: FakeHost) -> None:
    def fn(wf: Run, _: Any) -> Any:
        return wf.all([Step("a", lambda k: k, keyed=True), Step("b", lambda k: k, keyed=True)])

    c = start(any_host, fn)
    s = c.status("i")
    run_id = s.run_id
    assert s.output == [f"{run_id}-0.0", f"{run_id}-0.1"]


def test_a_primitive_inside_a_branch_fails_that_branch() -> None:
    host = FakeHost()

    def fn(wf: Run, _: Any) -> Any:
        return wf.all_settled([Step("nested", lambda: wf.sleep("no", 1))])[0].error

    c = start(host, fn)
    assert c.status("i").output == (
        "workflow primitives cannot be called inside a step's function")


def test_a_wide_fan_out_spans_events_under_the_budget_and_runs_each_branch_once(
        any_host: FakeHost) -> None:
    clock = any_host.clock

    def slow(i: int) -> Any:
        def f() -> int:
            RAN[f"b{i}"] += 1
            clock.jump(30)  # each branch takes 30 ms of the event's 100 ms budget
            return i
        return f

    def fn(wf: Run, _: Any) -> Any:
        return sum(wf.all([Step(f"b{i}", slow(i)) for i in range(100)]))

    c = start(any_host, fn, Config(run_budget_ms=100))
    s = c.status("i")
    assert (s.state, s.output) == ("completed", sum(range(100)))
    assert set(RAN.values()) == {1} and len(RAN) == 100


# -- mistakes park -------------------------------------------------------------------

@pytest.mark.parametrize(("branches", "says"), [
    ("not a list", "wf.all takes a list of branches, not str"),
    ([Step("a", ran("a")), "b"], "wf.all: branch 1: 'b' is not a branch"),
    ([Sleep("s", -1)], "wf.all: branch 0: sleep 's' must be 0 or more milliseconds"),
    ([Step("a", ran("a"), atempts=3)], "wf.all: branch 0: unknown step option(s) 'atempts'"),
    ([Step("a", ran("a"), tx=True)], "wf.all: branch 0: step 'a': a tx step cannot be"),
    ([Wait("bad\nname", 5)], "wf.all: branch 0: event name holds a control character"),
    ([Child("", "id")], "wf.all: branch 0: class name must have 1 to"),
])
def test_a_bad_branch_parks_the_instance_naming_it(branches: Any, says: str) -> None:
    host = FakeHost()
    c = start(host, lambda wf, _: wf.all(branches))
    s = c.status("i")
    assert s.state == "parked"
    assert s.error is not None and s.error.startswith(says), s.error
    assert not RAN


def test_an_empty_race_parks_and_an_empty_all_is_empty() -> None:
    host = FakeHost()
    c = start(host, lambda wf, _: wf.any([]))
    assert c.status("i").error == "wf.any needs at least one branch"
    host.serve("e", lambda wf, _: wf.all([]))
    e = host.client("e")
    e.start("i")
    host.run_due()
    assert e.status("i").output == []


def test_a_group_changed_under_a_running_instance_parks_as_reordered(
        any_host: FakeHost) -> None:
    version = {"names": ["a", "b"]}

    def fn(wf: Run, _: Any) -> Any:
        return wf.all([Sleep(n, 10_000) for n in version["names"]])

    c = start(any_host, fn)
    version["names"] = ["a", "c"]
    any_host.advance(10_000)
    s = c.status("i")
    assert s.state == "parked"
    assert s.error is not None and s.error.startswith(
        "the code changed the order of its steps: position 0 was recorded as group "
        "'all(a,b)', and the code now reaches group 'all(a,c)' there")


def test_a_settled_group_with_other_branches_parks_as_reordered(any_host: FakeHost) -> None:
    version = {"n": 2}

    def fn(wf: Run, _: Any) -> Any:
        wf.all([Step("x", ran("x"))] * version["n"], name="fixed")
        wf.sleep("then", 1000)

    c = start(any_host, fn)
    version["n"] = 3
    any_host.advance(1000)
    s = c.status("i")
    assert (s.state, s.error) == ("parked", (
        "the code changed a group under a running instance: position 0 recorded 2 "
        "branches, and the code now gives 3"))


def test_a_query_replays_over_an_open_group_and_writes_nothing() -> None:
    host = FakeHost()

    def fn(wf: Run, _: Any) -> Any:
        state = {"phase": "fan-out"}
        wf.query("phase", lambda _: state["phase"])
        wf.all([Step("a", ran("a")), Wait("go", DAY)])
        state["phase"] = "done"

    c = start(host, fn)
    before = host.instance("g", "i").backend.conn.total_changes
    assert c.query("i", "phase") == "fan-out"
    assert host.instance("g", "i").backend.conn.total_changes == before
    assert RAN == {"a": 1}
