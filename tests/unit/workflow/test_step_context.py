"""`wf.step_context`: a running step attempt's name, count, attempt, position, key and
deadline; a step branch's too; and a clear error outside a step's function."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Run, Step, StepContext
from wkguest.workflow.testing import FakeHost


def fields(ctx: StepContext) -> list[Any]:
    return [ctx.name, ctx.count, ctx.attempt, ctx.position, ctx.key, ctx.deadline_ms]


def test_the_context_of_each_attempt(any_host: FakeHost) -> None:
    seen: list[list[Any]] = []

    def wf(run: Run, _: Any) -> Any:
        run.step("first", lambda: 0)
        key = run.key()

        def f() -> str:
            seen.append(fields(run.step_context))
            if len(seen) == 1:
                raise RuntimeError("once")
            return "ok"

        return [run.step("s", f, delay=100, timeout="1 minute"), key]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    t0 = any_host.clock.now()
    any_host.run_due()
    any_host.advance(100)
    out, key = c.status("1").output
    assert out == "ok"
    assert seen == [["s", 1, 1, 1, key, t0 + 60_000],
                    ["s", 1, 2, 1, key, t0 + 100 + 60_000]]


def test_count_numbers_the_steps_of_a_name_across_a_loop(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        counts = []
        for i in range(3):
            counts.append(run.step("page", lambda: run.step_context.count))
            run.try_step("other", lambda: 1 / 0, attempts=1)
            run.sleep(f"nap {i}", "1s")
        counts.append(run.try_step("other", lambda: run.step_context.count).value)
        return counts

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    for _ in range(5):
        any_host.advance(1000)
    assert c.status("1").output == [1, 2, 3, 4]


def test_no_deadline_without_a_timeout(any_host: FakeHost) -> None:
    any_host.serve("w", lambda wf, _: wf.step("s", lambda: wf.step_context.deadline_ms))
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    assert c.status("1").output is None


def test_a_step_branch_has_its_context(any_host: FakeHost) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.step("a", lambda: 0)
        pos = run.position
        got = run.all([Step("a", lambda: fields(run.step_context)),
                       Step("b", lambda k: [k, run.step_context.key], keyed=True)])
        return [pos, got]

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    pos, (a, (key, ctx_key)) = c.status("1").output
    assert a[:4] == ["a", 2, 1, pos] and a[5] is None
    assert ctx_key == key


def test_outside_a_step_it_is_a_mistake_that_parks(any_host: FakeHost) -> None:
    any_host.serve("w", lambda wf, _: wf.step_context)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "parked"
    assert "wf.step_context is only there while a step's function runs" in (s.error or "")


def test_the_delay_function_gets_the_attempts_context(any_host: FakeHost) -> None:
    seen: list[tuple[str, int, int]] = []

    def delay(ctx: StepContext, error: Exception) -> int:
        seen.append((ctx.name, ctx.attempt, ctx.count))
        return 10

    def wf(run: Run, _: Any) -> Any:
        return run.try_step("s", lambda: 1 / 0, attempts=3, delay=delay,
                            backoff="constant").attempts

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    any_host.advance(10)
    any_host.advance(10)
    assert c.status("1").output == 3
    assert seen == [("s", 1, 1), ("s", 2, 1)]  # none after the last attempt
