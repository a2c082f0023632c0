"""Always replay: a fresh runner for every event (nothing cached) must behave exactly as
a warm one, and must catch a workflow that is not deterministic between steps."""

from __future__ import annotations

from collections import Counter
from typing import Any

from wkguest.workflow import Run
from wkguest.workflow.testing import FakeHost, Trap

DAY = 86_400_000


def scenario(host: FakeHost) -> tuple[list[Any], Counter[str]]:
    calls: Counter[str] = Counter()

    def step(name: str, value: Any, fails: int = 0) -> Any:
        def f(*args: Any) -> Any:
            calls[name] += 1
            if calls[name] <= fails:
                raise RuntimeError(f"{name} failed")
            if name == "trap" and calls[name] == 1:
                raise Trap("inside a step")
            return value(*args) if callable(value) else value
        return f

    def wf(run: Run, inp: Any) -> Any:
        items = run.step("load", step("load", {"items": inp}))
        items["items"].append("mutated")  # must not leak into later runs
        total = 0
        for i, it in enumerate(items["items"][:-1]):
            total += run.step("price", step(f"price{i}", lambda it=it: len(it)))
        run.step("trap", step("trap", "ok"))
        key = run.step_keyed("charge", step("charge", lambda k: k[-2:], fails=2))
        run.sleep("cool", 1000)
        got = run.wait_for_event("approve", 5000)
        late = run.wait_for_event("never", 100)
        r = run.try_step("notify", step("notify", None, fails=9), attempts=2)
        return {"total": total, "key": key, "got": got, "late": late, "notify": r.error}

    host.serve("w", wf)
    c = host.client("w")
    t0 = host.clock.now()
    observed: list[Any] = [c.start("1", ["ab", "cde"]).state]
    for _ in range(40):
        host.advance(500)
        s = c.status("1")
        observed.append((s.state, s.wake_at and s.wake_at - t0, s.positions, s.output))
        if host.clock.now() - t0 == 7000:  # sleeping until 6000+: the event comes first
            c.send_event("1", "approve", {"ok": True})
    return observed, calls


def test_always_replay_matches_a_warm_instance() -> None:
    warm = scenario(FakeHost())
    cold = scenario(FakeHost(always_replay=True))
    assert warm == cold
    observed, calls = warm
    assert observed[-1][0] == "completed"
    assert observed[-1][3] == {"total": 5, "key": "-4", "got": {"ok": True}, "late": None,
                               "notify": "RuntimeError: notify failed"}
    assert calls == {"load": 1, "price0": 1, "price1": 1, "trap": 2, "charge": 3, "notify": 2}


def test_always_replay_catches_a_non_deterministic_workflow() -> None:
    """The name depends on module state, not on recorded results: a warm instance keeps
    going, but a replay from the journal reaches another step at a recorded position."""
    host = FakeHost(always_replay=True)
    counter = {"n": 0}

    def wf(run: Run, _: Any) -> Any:
        counter["n"] += 1
        run.step(f"step-{counter['n']}", lambda: 1)
        run.sleep("z", 10)
        return "done"

    host.serve("w", wf)
    c = host.client("w")
    c.start("1")
    host.run_due()
    host.advance(10)
    s = c.status("1")
    assert s.state == "parked" and "changed the order of its steps" in (s.error or "")
