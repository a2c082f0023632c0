"""wf.now(), wf.random(), wf.uuid(): values taken once, recorded as positions (kinds N, R,
U), the same on every replay, and written with the run's next commit, not synced one by
one (core/deterministic.py, core/helper_records.py)."""

from __future__ import annotations

import uuid
from typing import Any

from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost

DAY = 86_400_000
REORDERED = "the code changed the order of its steps"


def _start(host: FakeHost, fn: Any, id: str = "1") -> Any:
    host.serve("w", fn)
    c = host.client("w")
    c.start(id)
    host.run_due()
    return c


def test_now_returns_the_recorded_time_across_a_sleep_and_an_event(any_host: FakeHost) -> None:
    seen: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        t = run.now()
        seen.append(t)
        run.sleep("nap", 1000)
        got = run.wait_for_event("go", DAY)
        return [t, run.now(), got]

    t0 = any_host.clock.now()
    c = _start(any_host, wf)
    any_host.advance(1000)
    any_host.clock.jump(5000)  # the clock moves on: replays must not see it
    c.send_event("1", "go", "yes")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "completed", s.error
    assert s.output == [t0, t0 + 6000, "yes"]  # the second now() was first reached then
    assert len(seen) >= 3 and set(seen) == {t0}  # every run replayed the first time


def test_random_and_uuid_are_drawn_once_and_replayed(any_host: FakeHost) -> None:
    seen: list[tuple[float, str]] = []

    def wf(run: Run, _: Any) -> Any:
        r, u = run.random(), run.uuid()
        seen.append((r, u))
        run.wait_for_event("go", DAY)
        run.wait_for_event("again", DAY)
        return [r, u]

    c = _start(any_host, wf)
    c.send_event("1", "go", None)
    any_host.run_due()
    c.send_event("1", "again", None)
    any_host.run_due()
    s = c.status("1")
    assert s.state == "completed", s.error
    r, u = s.output
    assert len(seen) == 3 and set(seen) == {(r, u)}
    assert isinstance(r, float) and 0.0 <= r < 1.0
    parsed = uuid.UUID(u)
    assert (str(parsed), parsed.version, parsed.variant) == (u, 4, uuid.RFC_4122)


def test_each_instance_draws_its_own_values(host: FakeHost) -> None:
    host.serve("w", lambda run, _: [run.random(), run.uuid()])
    c = host.client("w")
    for id in ("a", "b"):
        c.start(id)
    host.run_due()
    a, b = c.status("a").output, c.status("b").output
    assert a[0] != b[0] and a[1] != b[1]


def test_the_helpers_take_positions_in_the_journal(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1)
        t, r, u = run.now(), run.random(), run.uuid()
        run.step("b", lambda: 2)
        return [t, r, u]

    c = _start(any_host, wf)
    s = c.status("1")
    assert s.state == "completed", s.error
    rows = any_host.instance("w", "1").backend.rows(
        "SELECT pos, kind, name, result FROM _wk_wf_step ORDER BY pos")
    t, r, u = s.output
    assert rows == [(0, "S", "a", "1"), (1, "N", "now", str(t)), (2, "R", "random", repr(r)),
                    (3, "U", "uuid", f'"{u}"'), (4, "S", "b", "2")]
    assert s.positions == 5


def test_a_recorded_now_where_the_code_now_calls_a_step_is_a_reorder(
        any_host: FakeHost) -> None:
    code = {"v": 1}
    ran: list[str] = []

    def wf(run: Run, _: Any) -> Any:
        if code["v"] == 1:
            run.now()
        else:
            run.step("charge", lambda: ran.append("charge"))
        return run.wait_for_event("go", DAY)

    c = _start(any_host, wf)
    code["v"] = 2  # a deploy that put a step where now() was
    c.send_event("1", "go", None)
    any_host.run_due()
    s = c.status("1")
    # What a reorder does to the instance is the runner's; here: it is caught, naming both.
    assert s.state not in ("running", "waiting", "completed"), s
    assert s.error is not None and s.error.startswith(
        f"{REORDERED}: position 0 was recorded as wf.now(), and the code now reaches "
        "step 'charge' there.")
    assert ran == []


def test_a_helper_where_a_step_was_recorded_is_a_reorder(any_host: FakeHost) -> None:
    code = {"v": 1}

    def wf(run: Run, _: Any) -> Any:
        if code["v"] == 1:
            run.step("pick", lambda: 7)
        else:
            run.uuid()
        return run.wait_for_event("go", DAY)

    c = _start(any_host, wf)
    code["v"] = 2
    c.send_event("1", "go", None)
    any_host.run_due()
    s = c.status("1")
    assert s.error is not None and (
        "position 0 was recorded as step 'pick', and the code now reaches wf.uuid()"
        in s.error)


def test_one_helper_for_another_is_a_reorder(any_host: FakeHost) -> None:
    code = {"v": 1}

    def wf(run: Run, _: Any) -> Any:
        run.random() if code["v"] == 1 else run.now()
        return run.wait_for_event("go", DAY)

    c = _start(any_host, wf)
    code["v"] = 2
    c.send_event("1", "go", None)
    any_host.run_due()
    s = c.status("1")
    assert s.error is not None and "recorded as wf.random(), and the code now reaches " \
        "wf.now()" in s.error


def test_a_helper_where_a_wait_is_pending_is_a_reorder(any_host: FakeHost) -> None:
    code = {"v": 1}

    def wf(run: Run, _: Any) -> Any:
        if code["v"] == 2:
            run.now()
        return run.wait_for_event("go", DAY)

    c = _start(any_host, wf)  # waiting at position 0
    code["v"] = 2
    c.send_event("1", "go", None)
    any_host.run_due()
    s = c.status("1")
    assert s.error is not None and (
        "position 0 was recorded as wait 'go', and the code now reaches wf.now()" in s.error)


def _spy(host: FakeHost) -> list[tuple[str, str]]:
    """Every storage call of instance w/1 as (method, sql), from now on."""
    calls: list[tuple[str, str]] = []
    b = host.instance("w", "1").backend

    def spy(method: str, sql: str) -> bool:
        calls.append((method, sql))
        return False

    b.fail_when = spy
    return calls


def _durable_writes(host: FakeHost, helpers: int, then_wait: bool) -> tuple[int, Any]:
    code = {"go": False}

    def wf(run: Run, _: Any) -> Any:
        run.wait_for_event("start", DAY)
        if not code["go"]:
            return None
        values = [run.now() if i % 3 == 0 else run.random() if i % 3 else run.uuid()
                  for i in range(helpers)]
        run.step("after", lambda: "done")
        if then_wait:
            run.wait_for_event("end", DAY)
        return values

    c = _start(host, wf)
    c.send_event("1", "start", None)
    calls = _spy(host)
    code["go"] = True
    host.run_due()
    return sum(1 for m, _ in calls if m == "exec_durable"), calls


def test_the_helpers_are_not_synced_one_by_one(host: FakeHost) -> None:
    # Group commit: the helpers ride on the run's own durable writes. A run with twelve
    # helpers syncs as often as the same run without them.
    for then_wait in (False, True):
        host.instances.clear()
        without, _ = _durable_writes(host, 0, then_wait)
        host.instances.clear()
        with_helpers, calls = _durable_writes(host, 12, then_wait)
        assert with_helpers == without, then_wait
        recorded = [m for m, sql in calls if "wk:recorded" in sql]
        assert recorded == ["exec"] * 12


def test_the_run_that_recorded_them_makes_them_durable(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        values = [run.now(), run.random(), run.uuid()]
        run.wait_for_event("go", DAY)
        return values

    c = _start(any_host, wf)
    seen = c.status("1")
    assert (seen.state, seen.positions) == ("waiting", 4)
    any_host.instance("w", "1").backend.power_loss()
    assert c.status("1") == seen
    c.send_event("1", "go", None)
    any_host.run_due()
    out = c.status("1").output
    rows = any_host.instance("w", "1").backend.rows(
        "SELECT result FROM _wk_wf_step WHERE pos < 3 ORDER BY pos")
    assert [str(out[0]), repr(out[1]), f'"{out[2]}"'] == [r for (r,) in rows]


def test_a_helper_inside_a_steps_function_is_refused(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", lambda: run.now(), attempts=1)
        return [r.ok, r.error]

    s = _start(host, wf).status("1")
    assert s.output == [False, "workflow primitives cannot be called inside a step's function"]
