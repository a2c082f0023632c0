"""Steps: positions, replay from the journal, recorded results and errors, the Run API."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

from wkguest.workflow import Config, Fail, NonRetryable, Run, StepFailed
from wkguest.workflow.errors import Suspend
from wkguest.workflow.testing import FakeHost


def counted(calls: Counter[str], name: str, value: Any) -> Any:
    def f(*_: Any) -> Any:
        calls[name] += 1
        return value
    return f


def test_each_step_runs_once_and_replays_its_recorded_result(any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, inp: Any) -> Any:
        a = run.step("a", counted(calls, "a", {"n": inp}))
        run.sleep("nap", 1000)
        b = run.step("b", counted(calls, "b", [a["n"], 2]))
        return {"a": a, "b": b}

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1", 7)
    any_host.run_due()
    assert c.status("1").state == "waiting"
    any_host.advance(1000)
    s = c.status("1")
    assert s.state == "completed" and s.output == {"a": {"n": 7}, "b": [7, 2]}
    assert calls == {"a": 1, "b": 1}
    assert s.positions == 3


def test_loops_repeat_names_each_at_its_own_position(any_host: FakeHost) -> None:
    seen: list[int] = []

    def wf(run: Run, inp: Any) -> Any:
        out = []
        for i in range(inp):
            out.append(run.step("item", lambda i=i: seen.append(i) or i * i))
            if i == 2:
                run.sleep("pause", 10)
        return out

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1", 5)
    any_host.run_due()
    any_host.advance(10)
    assert c.status("1").output == [0, 1, 4, 9, 16]
    assert seen == [0, 1, 2, 3, 4]


def first_run_and_replay(host: FakeHost, steps: Any) -> tuple[Any, Any]:
    """What `steps(run)` gives a workflow's first run, and its replay after a sleep."""
    got: list[Any] = []

    def wf(run: Run, _: Any) -> Any:
        got.append(steps(run))
        run.sleep("z", 5)
        return None

    host.serve("w", wf)
    host.client("w").start("1")
    host.run_due()
    host.advance(5)
    first, replayed = got
    return first, replayed


def test_first_run_sees_the_value_as_replay_will(host: FakeHost) -> None:
    first, replayed = first_run_and_replay(
        host, lambda run: run.step("s", lambda: {"t": (1, 2), "b": bytearray(b"x")}))
    assert first == replayed == {"t": [1, 2], "b": b"x"}


def test_scalar_results_come_back_with_their_plain_types_on_the_first_run(
        host: FakeHost) -> None:
    """A plain scalar is journaled as itself; a subclass must still come back as its
    JSON type, as a replay would give it."""
    import enum

    class Colour(enum.IntEnum):
        RED = 1

    class Tag(str):
        pass

    first, replayed = first_run_and_replay(host, lambda run: [
        run.step("e", lambda: Colour.RED), run.step("s", lambda: Tag("x")),
        run.step("f", lambda: 0.5), run.step("big", lambda: "é" * 100_000),
        run.step("n", lambda: None), run.step("b", lambda: True)])
    assert first == replayed == [1, "x", 0.5, "é" * 100_000, None, True]
    assert [type(v) for v in first] == [type(v) for v in replayed] == [
        int, str, float, str, type(None), bool]


def test_mutating_a_result_does_not_leak_into_the_next_run(host: FakeHost) -> None:
    """The warm cache hands every run its own copies (flat and nested values alike)."""
    seen: list[Any] = []

    def wf(run: Run, _: Any) -> Any:
        flat = run.step("flat", lambda: {"n": 1})
        nested = run.step("nested", lambda: {"items": [1, 2], "meta": {"k": "v"}})
        lst = run.step("list", lambda: [1, 2])
        seen.append((dict(flat), repr(nested), list(lst)))
        flat["n"] = 99
        nested["items"].append(3)
        nested["meta"]["k"] = "changed"
        lst.clear()
        run.sleep("z", 5)
        run.sleep("y", 5)
        return None

    host.serve("w", wf)
    host.client("w").start("1")
    host.run_due()
    host.advance(5)
    host.advance(5)
    assert len(seen) == 3
    assert seen[0] == seen[1] == seen[2]


def test_step_keyed_gets_run_id_and_position(host: FakeHost) -> None:
    keys: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: None)
        return run.step_keyed("b", lambda key: keys.append(key) or key)

    host.serve("w", wf)
    c = host.client("w")
    run_id = c.start("1").run_id
    host.run_due()
    assert keys == [f"{run_id}-1"]
    assert c.status("1").output == f"{run_id}-1"


def test_reordered_steps_park_naming_both_and_the_position(host: FakeHost) -> None:
    version = {"v": 1}

    def wf(run: Run, _: Any) -> Any:
        names = ["reserve", "charge"] if version["v"] == 1 else ["charge", "reserve"]
        run.step(names[0], lambda: 1)
        run.sleep("wait", 100)
        run.step(names[1], lambda: 2)
        return "done"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    version["v"] = 2  # a deploy that swaps two steps of running instances
    host.advance(100)
    s = c.status("1")
    assert s.state == "parked"
    assert s.error is not None
    assert "the code changed the order of its steps" in s.error
    assert "position 0" in s.error and "'reserve'" in s.error and "'charge'" in s.error


def test_a_different_primitive_at_a_recorded_position_is_reordered_too(host: FakeHost) -> None:
    version = {"v": 1}

    def wf(run: Run, _: Any) -> Any:
        if version["v"] == 1:
            run.sleep("x", 10)
        else:
            run.step("x", lambda: 1)
        run.sleep("end", 10)
        return None

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.advance(10)
    version["v"] = 2
    host.advance(10)
    err = c.status("1").error or ""
    assert "recorded as sleep 'x'" in err and "reaches step 'x'" in err


def test_except_exception_cannot_swallow_a_stop(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        try:
            run.sleep("nap", 1000)
        except Exception:  # noqa: BLE001 - the point: user code that catches too much
            return "swallowed"
        return "slept"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert c.status("1").state == "waiting"
    host.advance(1000)
    assert c.status("1").output == "slept"


def test_a_swallowed_signal_still_stops_the_run(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        with contextlib.suppress(BaseException):  # misuse on purpose
            run.sleep("nap", 1000)
        run.step("after", lambda: 1)  # must not run yet
        return "went on"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.state == "waiting" and s.positions == 1


def test_step_failed_is_catchable_and_its_error_replays_identically(any_host: FakeHost) -> None:
    caught: list[tuple[str, int, str]] = []

    def boom() -> Any:
        raise NonRetryable("no such card")

    def wf(run: Run, _: Any) -> Any:
        try:
            run.step("charge", boom)
        except StepFailed as e:
            caught.append((e.error, e.attempts, str(e)))
        r = run.try_step("again", boom)
        caught.append((r.error or "", r.attempts, str(r.ok)))
        run.sleep("z", 10)
        return "handled"

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(10)
    assert c.status("1").output == "handled"
    first, replayed = caught[:2], caught[2:]
    assert first == replayed
    assert first[0] == ("no such card", 1,
                        "step 'charge' failed after 1 attempt(s): no such card")


def test_uncaught_step_failure_fails_the_workflow(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("charge", lambda: (_ for _ in ()).throw(NonRetryable("declined")))
        return "unreachable"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.state == "failed"
    assert s.error == "step 'charge' failed after 1 attempt(s): declined"


def test_fail_on_purpose(host: FakeHost) -> None:
    def wf(run: Run, inp: Any) -> Any:
        if inp == "raise":
            raise Fail("raised on purpose")
        run.fail("called on purpose")

    host.serve("w", wf)
    c = host.client("w")
    c.start("a", "raise")
    c.start("b", "call")
    host.run_due()
    assert c.status("a").error == "raised on purpose"
    assert c.status("b").error == "called on purpose"
    assert c.status("b").state == "failed"


def test_fail_inside_a_step_is_not_retried(host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def f() -> Any:
        calls["f"] += 1
        raise Fail("stop now")

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", f).error

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert calls["f"] == 1 and c.status("1").output == "stop now"


def test_try_step_ok(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", lambda: b"\x01")
        return [r.ok, r.value, r.error, r.attempts]

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert c.status("1").output == [True, b"\x01", None, 0]


def test_primitives_cannot_nest_inside_a_step(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.try_step("outer", lambda: run.step("inner", lambda: 1)).error

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert "cannot be called inside a step" in (c.status("1").output or "")


def test_a_result_over_the_limit_is_a_step_error_naming_the_limit(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.try_step("big", lambda: "x" * 2000).error

    host.serve("w", wf, Config(max_value_bytes=1000))
    c = host.client("w")
    c.start("1")
    host.run_due()
    out = c.status("1").output
    assert "the result of step 'big' is 2,002 bytes encoded" in out
    assert "limit of 1,000 bytes (Config.max_value_bytes)" in out


def test_an_unsupported_result_is_a_step_error(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.try_step("bad", lambda: {"s": {1, 2}}).error

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert "the result of step 'bad'['s']: set is not a supported" in c.status("1").output


def test_an_output_over_the_limit_fails_the_workflow(host: FakeHost) -> None:
    host.serve("w", lambda run, _: "y" * 5000, Config(max_value_bytes=1000))
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.state == "failed" and "the workflow's output is 5,002 bytes" in (s.error or "")


def test_bad_names_are_bugs_in_the_workflow(host: FakeHost) -> None:
    host.serve("w", lambda run, _: run.step("a\x1eb", lambda: 1), Config(attempts=1))
    c = host.client("w")
    c.start("1")
    host.run_due()
    host.advance(10_000)
    s = c.status("1")
    assert s.state == "parked" and "control character" in (s.error or "")


def test_suspend_is_a_base_exception() -> None:
    assert not issubclass(Suspend, Exception)
    assert issubclass(Fail, NonRetryable)
