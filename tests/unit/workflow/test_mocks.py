"""A test's mocks of an instance, set through wk-workflow/v1's `test` route and read by the
runner from the instance's own table (core/mocks.py): a step's result, its error or a
timeout for some attempts, sleeps skipped, an event wait timed out at once. `any_host`
runs each test warm (the route's copy serves the runner) and with a fresh runner every
event (the runner reads the table where its load sees it)."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run, Step, StepContext, cbor
from wkguest.workflow.testing import FakeHost

from .conftest import Raw

DAY = 86_400_000


def mock(host: FakeHost, mocks: Any, id: str = "1", sender: str = "operator"
         ) -> tuple[int, Any]:
    """POST the test route to w/`id` with `{"mocks": mocks}`."""
    status, body = host.call("w", id, "POST", "/wk-workflow/v1/test",
                             cbor.dumps({"mocks": mocks}), sender=sender)
    return status, cbor.loads(body)


def steps(host: FakeHost, id: str = "1") -> list[dict[str, Any]]:
    status, out = Raw(host, "w")(id, "steps", {"attempts": True})
    assert status == 200, out
    return list(out["steps"])


def history(host: FakeHost, pos: int = 0, id: str = "1") -> list[tuple[Any, ...]]:
    """Position `pos`'s attempts: (attempt, outcome, error)."""
    return [(a["attempt"], a["outcome"], a["error"]) for a in steps(host, id)[pos]["history"]]


def counting(calls: list[str], name: str, value: Any = "real") -> Any:
    """A step function that notes `name` in `calls` when it runs, and returns `value`."""
    def f() -> Any:
        calls.append(name)
        return value
    return f


def spy(seen: list[str]) -> Any:
    """A FakeBackend.fail_when that faults nothing and notes every statement in `seen`."""
    def note(method: str, sql: str) -> bool:
        seen.append(sql)
        return False
    return note


# -- steps -------------------------------------------------------------------------------

def test_a_result_mock_is_returned_recorded_and_replayed_without_the_function(
        any_host: FakeHost) -> None:
    calls: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        got = run.step("charge", counting(calls, "charge"))
        return [got, run.wait_for_event("go", "1 day")]

    any_host.serve("w", wf)
    value = {"id": b"\x00\x01", "tag": "\x00odd", "n": [1, 2.5, None]}
    assert mock(any_host, {"steps": {"charge": [{"result": value}]}}) == (
        200, {"mocks": {"steps": {"charge": [{"result": value}]}}})
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").state == "waiting"
    row = steps(any_host)[0]
    assert (row["name"], row["state"], row["attempts"]) == ("charge", "done", 1)
    assert history(any_host) == [(1, "returned", None)]
    # Cleared, the recorded value is still what the replay gives: the function never runs.
    assert mock(any_host, {})[0] == 200
    c.send_event("1", "go", "yes")
    any_host.run_due()
    assert c.status("1").output == [value, "yes"]
    assert calls == []


def test_an_error_for_two_attempts_then_the_real_function(any_host: FakeHost) -> None:
    calls: list[str] = []
    any_host.serve("w", lambda run, _: run.step("s", counting(calls, "s"), attempts=5,
                                                delay=10))
    mock(any_host, {"steps": {"s": [{"error": "service down", "times": 2}]}})
    c = any_host.client("w")
    c.start("1")
    for _ in range(5):
        any_host.advance(1000)
    assert c.status("1").output == "real"
    assert calls == ["s"]
    assert history(any_host) == [(1, "failed", "service down"), (2, "failed", "service down"),
                                 (3, "returned", None)]


def test_a_delay_function_gets_a_mocked_error_as_a_raised_one(host: FakeHost) -> None:
    seen: list[tuple[int, str, str]] = []

    def delay(ctx: StepContext, error: Exception) -> int:
        seen.append((ctx.attempt, type(error).__name__, str(error)))
        return 10

    host.serve("w", lambda run, _: run.step("s", lambda: "real", delay=delay))
    mock(host, {"steps": {"s": [{"error": "e1", "times": 1}, {"error": "e2", "times": 1}]}})
    c = host.client("w")
    c.start("1")
    for _ in range(3):
        host.advance(100)
    assert c.status("1").output == "real"
    assert seen == [(1, "MockedError", "e1"), (2, "MockedError", "e2")]


def test_a_non_retryable_error_fails_the_workflow(any_host: FakeHost) -> None:
    calls: list[str] = []
    any_host.serve("w", lambda run, _: run.step("pay", counting(calls, "pay"), attempts=5))
    mock(any_host, {"steps": {"pay": [{"error": "card declined", "non_retryable": True}]}})
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "failed" and s.error is not None and "card declined" in s.error
    assert calls == []
    assert history(any_host) == [(1, "failed", "card declined")]
    assert steps(any_host)[0]["state"] == "failed"


def test_a_forced_timeout_ends_as_a_real_timeout_does(host: FakeHost) -> None:
    real: list[str] = []

    def late() -> str:  # the real timeout: the attempt ends past its second
        real.append("late")
        if len(real) == 1:
            host.clock.jump(1500)
        return "real"

    host.serve("w", lambda run, id: run.step(
        "s", late if id == "real" else (lambda: "mocked-out"), timeout="1 second", delay=10))
    mock(host, {"steps": {"s": [{"timeout": True, "times": 1}]}}, id="forced")
    c = host.client("w")
    for id in ("real", "forced"):
        c.start(id, id)
        host.run_due()
        host.advance(10)
    assert history(host, id="forced") == history(host, id="real")
    assert [h[1] for h in history(host, id="forced")] == ["timed-out", "returned"]
    assert c.status("forced").output == "mocked-out"
    # No deadline was narrowed for the forced one: its function never ran then.
    assert host.instance("w", "forced").backend.deadlines == [1000, None]


def test_a_forced_timeout_of_a_step_without_one_says_so(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.try_step("s", lambda: "real", attempts=1).error)
    mock(host, {"steps": {"s": [{"timeout": True}]}})
    c = host.client("w")
    c.start("1")
    host.run_due()
    [(n, outcome, error)] = history(host)
    assert (n, outcome) == (1, "timed-out")
    assert "forced by the test" in error and c.status("1").output == error


def test_rules_cover_the_attempts_at_each_position_of_the_name(any_host: FakeHost) -> None:
    calls: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        return [run.step("s", counting(calls, "s1"), delay=10),
                run.step("s", counting(calls, "s2"), delay=10)]

    any_host.serve("w", wf)
    mock(any_host, {"steps": {"s": [{"error": "once", "times": 1}, {"result": "mocked"}]}})
    c = any_host.client("w")
    c.start("1")
    for _ in range(4):
        any_host.advance(100)
    assert c.status("1").output == ["mocked", "mocked"]
    assert calls == []
    assert history(any_host, 0) == history(any_host, 1) == [
        (1, "failed", "once"), (2, "returned", None)]


def test_a_groups_step_branches_take_the_same_rules(any_host: FakeHost) -> None:
    calls: list[str] = []
    any_host.serve("w", lambda run, _: run.all([Step("a", counting(calls, "a")),
                                                Step("b", counting(calls, "b", "real-b"))]))
    mock(any_host, {"steps": {"a": [{"result": "mocked-a"}]}})
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").output == ["mocked-a", "real-b"]
    assert calls == ["b"]


# -- sleeps and waits --------------------------------------------------------------------

def test_skipped_sleeps_pass_without_the_clock_moving(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.sleep("cool-off", "3 days")
        run.sleep_until("monday", run.now() + 7 * DAY)
        return "slept"

    any_host.serve("w", wf)
    mock(any_host, {"sleeps": "skip"})
    c = any_host.client("w")
    t0 = any_host.clock.now()
    c.start("1")
    any_host.run_due()
    assert c.status("1").output == "slept"
    assert any_host.clock.now() == t0
    sleeps = [r for r in steps(any_host) if r["kind"] == "sleep"]
    assert [(r["state"], r["wake_at"]) for r in sleeps] == [("done", t0), ("done", t0)]


def test_a_forced_event_timeout_returns_none_at_once(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return [run.wait_for_event("approved", "1 day"), run.wait_for_event("other", 5)]

    any_host.serve("w", wf)
    mock(any_host, {"event_timeouts": ["approved"]})
    c = any_host.client("w")
    t0 = any_host.clock.now()
    c.start("1")
    any_host.run_due()
    assert c.status("1").state == "waiting"  # "other" is not mocked: it waits its 5 ms
    assert steps(any_host)[0]["state"] == "timed-out"
    any_host.advance(5)
    assert c.status("1").output == [None, None]
    assert any_host.clock.now() == t0 + 5


# -- the route ---------------------------------------------------------------------------

def test_mocks_set_before_a_waiting_operator_start_apply_to_its_first_run(
        any_host: FakeHost) -> None:
    calls: list[str] = []
    any_host.serve("w", lambda run, _: run.step("s", counting(calls, "s")))
    assert mock(any_host, {"steps": {"s": [{"result": 42}]}})[0] == 200
    assert ("w", "1") in any_host.instances  # kept for the start, with no instance yet
    status, out = Raw(any_host, "w")("1", "start", {"wait_ms": 1000}, sender="operator")
    assert status == 200 and out["state"] == "completed" and out["output"] == 42
    assert calls == []


def test_new_mocks_replace_the_old_and_empty_ones_clear_them(any_host: FakeHost) -> None:
    calls: list[str] = []
    any_host.serve("w", lambda run, id: run.step("s", counting(calls, id)))
    mock(any_host, {"steps": {"s": [{"result": "a"}]}, "sleeps": "skip"})
    mock(any_host, {"steps": {"s": [{"result": "b"}]}})
    c = any_host.client("w")
    c.start("1", "1")
    any_host.run_due()
    assert mock(any_host, {}) == (200, {"mocks": {}})
    c.start("2", "2")  # mocks are per instance: "2" never had any
    any_host.run_due()
    assert (c.status("1").output, c.status("2").output) == ("b", "real")
    assert calls == ["2"]
    assert mock(any_host, {"sleeps": "skip"})[0] == 200  # a finished instance: harmless


@pytest.mark.parametrize("sender", ["actor", "public"])
def test_only_an_operator_may_set_mocks(host: FakeHost, sender: str) -> None:
    host.serve("w", lambda run, _: None)
    status, out = mock(host, {"sleeps": "skip"}, sender=sender)
    assert status == 403 and out["error"] == "forbidden"
    assert ("w", "1") not in host.instances  # never started: nothing left behind


@pytest.mark.parametrize(("mocks", "named"), [
    (None, "'mocks' must be a map"),
    ({"step": {}}, "'step'"),
    ({"steps": []}, "mocks.steps"),
    ({"steps": {"s": {"result": 1}}}, "list of rules"),
    ({"steps": {"s": [{"times": 1}]}}, "exactly one"),
    ({"steps": {"s": [{"result": 1, "error": "x"}]}}, "exactly one"),
    ({"steps": {"s": [{"result": 1, "times": 0}]}}, "'times'"),
    ({"steps": {"s": [{"result": 1, "times": True}]}}, "'times'"),
    ({"steps": {"s": [{"error": 3}]}}, "'error' must be a text"),
    ({"steps": {"s": [{"error": "x", "non_retryable": 1}]}}, "non_retryable"),
    ({"steps": {"s": [{"result": 1, "non_retryable": True}]}}, "non_retryable"),
    ({"steps": {"s": [{"timeout": 1}]}}, "'timeout' must be true"),
    ({"steps": {"s": [{"result": 1}, {"result": 2}]}}, "rule 2 of step 's'"),
    ({"steps": {"": [{"result": 1}]}}, "step name"),
    ({"sleeps": "all"}, "mocks.sleeps"),
    ({"event_timeouts": "approved"}, "mocks.event_timeouts"),
    ({"event_timeouts": ["a\nb"]}, "control character"),
], ids=lambda v: repr(v)[:30])
def test_a_bad_map_is_refused_naming_what_is_wrong(host: FakeHost, mocks: Any,
                                                   named: str) -> None:
    calls: list[str] = []
    host.serve("w", lambda run, _: [run.wait_for_event("go", "1 day"),
                                    run.step("s", counting(calls, "s"))][1])
    c = host.client("w")
    c.start("1")
    host.run_due()
    mock(host, {"steps": {"s": [{"result": "kept"}]}})
    status, out = mock(host, mocks)
    assert status == 400 and out["error"] == "bad-request"
    assert named in out["message"], out["message"]
    c.send_event("1", "go")
    host.run_due()
    assert c.status("1").output == "kept"  # the old mocks still stand
    assert calls == []


def test_an_instance_without_mocks_never_reads_their_table(host: FakeHost) -> None:
    host.serve("w", lambda run, _: [run.step("s", lambda: 1), run.sleep("nap", 1000),
                                    run.wait_for_event("go", "1 day")])
    c = host.client("w")
    c.start("1")
    seen: list[str] = []
    backend = host.instance("w", "1").backend
    backend.fail_when = spy(seen)
    host.run_due()
    host.advance(1000)
    c.send_event("1", "go")
    host.run_due()
    assert c.status("1").state == "completed"
    loads = [s for s in seen if "_wk_wf_test" in s]
    assert loads and all("sqlite_master" in s for s in loads)  # the LOAD's probe alone
    assert len(loads) == sum("FROM _wk_wf AS w" in s for s in seen)


def test_a_warm_runner_reads_the_table_once_a_fresh_one_where_it_is(host: FakeHost) -> None:
    host.serve("w", lambda run, _: [run.step("s", lambda: "real"), run.sleep("nap", 1000)])
    mock(host, {"steps": {"s": [{"result": "mocked"}]}})
    c = host.client("w")
    c.start("1")
    seen: list[str] = []
    inst = host.instance("w", "1")
    inst.backend.fail_when = spy(seen)
    host.run_due()
    host.advance(1000)
    assert c.status("1").output == ["mocked", None]
    assert not [s for s in seen if "FROM _wk_wf_test" in s]  # the route's copy served
    host.always_replay = True  # from now on, a fresh runner each event: each run reads
    mock(host, {"steps": {"s": [{"result": "mocked"}]}}, id="2")
    seen.clear()
    host.instance("w", "2").backend.fail_when = spy(seen)
    c.start("2")
    host.run_due()
    host.advance(1000)
    assert c.status("2").output == ["mocked", None]
    reads = sum("FROM _wk_wf_test" in s for s in seen)
    assert reads == sum("FROM _wk_wf AS w" in s for s in seen) == 2  # two runs, one each
