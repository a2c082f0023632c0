"""Retries: attempts counted before f runs, backoff, traps, and the watchdog alarm."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost, Trap


def flaky(fails: int, log: list[int], host: FakeHost, trap: bool = False) -> Any:
    def f() -> Any:
        log.append(host.clock.now())
        if len(log) <= fails:
            if trap:
                raise Trap("the wasm instance traps")
            raise RuntimeError(f"failure {len(log)}")
        return "ok"
    return f


def steps_row(host: FakeHost, id: str, pos: int = 0) -> tuple[Any, ...]:
    return host.instance("w", id).backend.rows(
        "SELECT kind, attempts, error, next_attempt_at FROM _wk_wf_step WHERE pos = ?", (pos,))[0]


def test_backoff_doubles_and_then_succeeds(host: FakeHost) -> None:
    log: list[int] = []
    host.serve("w", lambda run, _: run.step("s", flaky(3, log, host)))
    c = host.client("w")
    c.start("1")
    t0 = host.clock.now()
    host.run_due()
    assert steps_row(host, "1")[:3] == ("p", 1, "RuntimeError: failure 1")
    for _ in range(10):
        host.advance(1000)
    assert [t - t0 for t in log] == [0, 1000, 3000, 7000]
    s = c.status("1")
    assert s.state == "completed" and s.output == "ok"
    assert steps_row(host, "1")[:3] == ("S", 4, None)


def test_attempts_run_out_into_a_recorded_error(host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        r = run.try_step("s", flaky(99, log, host), attempts=3, backoff_ms=10, factor=3)
        return [r.ok, r.error, r.attempts]

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    t0 = host.clock.now()
    host.advance(0)
    host.advance(10)
    host.advance(30)
    assert [t - t0 for t in log] == [0, 10, 40]
    assert c.status("1").output == [False, "RuntimeError: failure 3", 3]


def test_max_backoff_caps_the_delay(host: FakeHost) -> None:
    log: list[int] = []
    host.serve("w", lambda run, _: run.step("s", flaky(4, log, host), max_backoff_ms=1500,
                                            attempts=9))
    host.client("w").start("1")
    t0 = host.clock.now()
    host.run_due()
    for _ in range(20):
        host.advance(500)
    assert [t - t0 for t in log] == [0, 1000, 2500, 4000, 5500]


def test_an_event_during_backoff_does_not_run_f_early(host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("s", flaky(1, log, host), backoff_ms=60_000)
        return run.wait_for_event("go", 1_000_000)

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    assert len(log) == 1
    c.send_event("1", "go", "early")
    assert host.run_due() == 1  # the event's alarm ran a replay...
    assert len(log) == 1  # ...that stopped at the pending backoff
    assert host.instance("w", "1").backend.alarm == host.clock.now() + 60_000 - 0
    host.advance(60_000)
    assert len(log) == 2
    assert c.status("1").output == "early"


def test_a_trap_inside_a_step_counts_as_an_attempt(host: FakeHost) -> None:
    log: list[int] = []
    host.serve("w", lambda run, _: run.step("s", flaky(2, log, host, trap=True)))
    c = host.client("w")
    c.start("1")
    t0 = host.clock.now()
    host.run_due()
    assert host.traps == 1
    kind, attempts, error, next_at = steps_row(host, "1")
    assert (kind, attempts) == ("p", 1)
    assert error == "attempt 1 ended without a result (the instance trapped, or the event was cut)"
    # the watchdog alarm set before f ran brings the retry, after the step's backoff
    assert host.instance("w", "1").backend.alarm == next_at == t0 + 1000
    host.advance(1000)
    host.advance(2000)
    assert [t - t0 for t in log] == [0, 1000, 3000]
    assert c.status("1").output == "ok"


def test_an_event_after_a_trap_does_not_run_f_early(host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("s", flaky(1, log, host, trap=True), backoff_ms=5000)
        return run.wait_for_event("e", 100_000)

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    c.send_event("1", "e", None)
    host.run_due()
    assert len(log) == 1
    host.advance(5000)
    assert len(log) == 2


def test_traps_on_every_attempt_fail_the_step_saying_so(host: FakeHost) -> None:
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", flaky(99, log, host, trap=True), attempts=2).error

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    for _ in range(10):
        host.advance(1000)
    assert len(log) == 2
    # The host tells the next run why the event was cut (lifecycle.last-trap).
    assert c.status("1").output == (
        "attempt 2 was cut: guest trapped: Trap: the wasm instance traps")


def test_while_unfinished_the_alarm_is_always_set(any_host: FakeHost) -> None:
    """Check the watchdog rule after every event of a workflow with every kind of stop."""
    log: list[int] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("flaky", flaky(2, log, any_host, trap=True))
        run.step("err", flaky(3, log, any_host))
        run.sleep("nap", 5000)
        run.wait_for_event("e", 20_000)
        return "done"

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    states = set()
    for _ in range(200):
        key = any_host.due()
        if key is None:
            any_host.clock.jump(500)
            continue
        any_host.fire(*key)
        s = c.status("1")
        states.add(s.state)
        if s.is_finished:
            break
        assert any_host.instance("w", "1").backend.alarm is not None, s
    assert c.status("1").output == "done"
    assert states == {"running", "waiting", "completed"}
