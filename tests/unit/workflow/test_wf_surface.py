"""What users and libraries see: `wf.`'s calls only (the cursor stays out of sight), a
package `__all__` without the runner's machinery, and `wkguest.workflow.extend`'s answers
for libraries over workflows."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import wkguest.workflow
from wkguest.workflow import CodeError, Run, extend
from wkguest.workflow.testing import FakeHost

HOUR = 3_600_000

# What docs/workflows.md's table of primitives (and "Beside the calls") gives users.
CALLS = {"step", "step_keyed", "try_step", "sleep", "sleep_until", "wait_for_event",
         "continue_as_new", "fail", "step_context", "now", "random", "uuid", "patched",
         "deprecate_patch", "all", "all_settled", "any", "child", "spawn", "join", "emit",
         "query", "set_labels", "position", "run_id", "key", "wait_for_workflow", "on_update"}
MACHINERY = {"Backend", "CborError", "Runner", "Protocol", "RealBackend", "Suspend",
             "StoreFault", "Reply", "Cursor", "Frontier"}


def test_wf_shows_only_the_calls_workflows_are_written_with(host: FakeHost) -> None:
    seen: list[set[str]] = []

    def fn(wf: Run, _: Any) -> Any:
        seen.append({n for n in dir(wf) if not n.startswith("_")})
        return wf.step("s", lambda: 1)

    host.serve("w", fn)
    host.client("w").start("1")
    host.run_due()
    assert host.client("w").status("1").output == 1
    assert seen and seen[0] == CALLS


def test_the_package_exports_no_machinery() -> None:
    assert set(wkguest.workflow.__all__) & MACHINERY == set()
    for name in wkguest.workflow.__all__:
        assert hasattr(wkguest.workflow, name), name


def test_extend_answers_what_a_library_asks(host: FakeHost) -> None:
    got: list[Any] = []

    def fn(wf: Run, _: Any) -> Any:
        def flaky() -> str:
            if wf.step_context.attempt == 1:
                raise RuntimeError("once")
            return "ok"

        wf.step("flaky", flaky, delay=100)
        waited_at = wf.position
        wf.wait_for_event("go", 1000)
        got[:] = [extend.instance_id(wf), extend.created_at(wf), extend.attempts_at(wf, 0),
                  extend.state_at(wf, 0), extend.state_at(wf, waited_at),
                  extend.attempts_at(wf, 99)]
        return None

    host.serve("w", fn)
    c = host.client("w")
    created = host.clock.now()
    c.start("order-7")
    host.run_due()
    host.advance(100)
    host.advance(1000)
    assert c.status("order-7").state == "completed"
    assert got == ["order-7", created, 2, "done", "timed-out", None]


def test_extend_refuse_parks_the_instance_saying_why(host: FakeHost) -> None:
    def fn(wf: Run, _: Any) -> Any:
        with contextlib.suppress(CodeError):  # swallowed: the next call raises it again
            extend.refuse(wf, "library.call: a bad option")
        return wf.step("after", lambda: 1)

    host.serve("w", fn)
    c = host.client("w")
    c.start("1")
    host.run_due()
    s = c.status("1")
    assert s.state == "parked"
    assert "library.call: a bad option" in (s.error or "")


@pytest.mark.parametrize("module", ["extend", "errors", "backend", "client", "status",
                                    "cbor", "runner", "protocol"])
def test_the_public_modules_the_docstring_names_exist(module: str) -> None:
    doc = wkguest.workflow.__doc__ or ""
    assert f"wkguest.workflow.{module}" in doc
    __import__(f"wkguest.workflow.{module}")
