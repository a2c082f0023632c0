"""The instance publishes its state for the host's listing (publish.py): the state listed
is the state written, and an event that leaves the state as it was publishes nothing."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost

MIN = 60_000


def wf(run: Run, _: Any) -> Any:
    run.step("a", lambda: 1)
    for i in range(3):
        run.sleep(f"nap{i}", MIN)
    got = run.wait_for_event("go", timeout_ms=100 * MIN)
    return got


def published(host: FakeHost) -> tuple[str, int] | None:
    p = host.instance("w", "1").backend.published
    return None if p is None else (p[0], p[1])


def test_the_published_state_follows_the_state_written(any_host: FakeHost) -> None:
    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    seen = []
    for _ in range(5):
        any_host.advance(MIN)
        s = c.status("1")
        assert published(any_host) is not None and published(any_host)[0] == s.state
        seen.append(s.state)
    assert seen[-1] == "waiting"
    c.send_event("1", "go", {"ok": True})
    any_host.run_due()
    assert c.status("1").state == "completed"
    row = any_host.instance("w", "1").backend.rows("SELECT state, updated_at FROM _wk_wf")
    assert [published(any_host)] == row == [("completed", any_host.clock.now())]


def test_a_warm_instance_publishes_only_when_its_state_changes(host: FakeHost) -> None:
    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    b = host.instance("w", "1").backend
    changes = []
    for _ in range(5):  # three naps, then the wait: each run ends "waiting"
        host.advance(MIN)
        changes.append(c.status("1").state)
    first = b.calls["publish"]
    host.advance(MIN)
    c.send_event("1", "nothing", None)  # an event nobody waits for: still waiting
    host.run_due()
    assert b.calls["publish"] == first
    c.send_event("1", "go", 1)
    host.run_due()
    assert c.status("1").state == "completed" and b.calls["publish"] == first + 1
    # running at the start, then waiting: two publishes before the end
    assert first == 2
