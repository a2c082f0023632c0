"""Why an event was cut reaches the runner in its next event (the host's
`lifecycle.last-trap`, FakeHost's here): on the attempt it cut, in the status while the
instance retries, and in the final failure or parking, which no longer says "none recorded"."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Config, Run
from wkguest.workflow.testing import FakeHost, Trap


def test_a_trap_in_a_step_is_on_its_attempt_and_in_the_status(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        return run.step("charge", lambda: (_ for _ in ()).throw(Trap("out of fuel")),
                        attempts=2, backoff_ms=10)

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()  # traps; its alarm (the watchdog) brings the next run
    any_host.advance(10)
    s = c.status("1")
    if s.state != "failed":
        assert "its last event was cut: guest trapped: Trap: out of fuel" in (s.error or "")
    for _ in range(10):
        any_host.advance(1000)
    s = c.status("1")
    assert s.state == "failed", s
    assert "attempt 2 was cut: guest trapped: Trap: out of fuel" in (s.error or ""), s.error
    assert "none recorded" not in (s.error or "")


def test_runs_cut_outside_any_step_park_with_the_last_reason(host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 1)
        raise Trap("sys.exit(3)")

    host.serve("w", wf, Config(attempts=2, backoff_ms=10))
    c = host.client("w")
    c.start("1")
    for _ in range(20):
        host.advance(1000)
    s = c.status("1")
    assert s.state == "parked", s
    assert "its last event was cut: guest trapped: Trap: sys.exit(3)" in (s.error or ""), s
    assert "none recorded" not in (s.error or "")


def test_the_reason_is_read_once_an_event_ends_cleanly(host: FakeHost) -> None:
    calls = {"n": 0}

    def wf(run: Run, _: Any) -> Any:
        def f() -> int:
            calls["n"] += 1
            if calls["n"] == 1:
                raise Trap("cut once")
            return 5
        return run.step("s", f, backoff_ms=10)

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    backend = host.instance("w", "1").backend
    assert backend.trap is not None
    host.advance(1000)
    s = c.status("1")
    assert (s.state, s.output) == ("completed", 5)
    assert backend.trap is None  # the run that read it ended cleanly: the host forgets
