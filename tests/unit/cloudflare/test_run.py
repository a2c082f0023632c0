"""What `run()` sees and does, without step.do: the event (lazy), sleeps, waits (a
timeout raises), `self.env`, and exceptions escaping run() (errored) against the
runner's own signals (parked). FakeHost, both replay modes."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from wkguest.cloudflare import (
    NonRetryableError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
    WorkflowTimeoutError,
)
from wkguest.workflow.testing import FakeHost
from wkguest.workflow.testing.fakes import START_MS

from .conftest import DAY, MINUTE, Serve, journal

SEEN: list[Any] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    SEEN.clear()


class Reads(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        step.sleep("a while", "1 minute")
        return [event.payload, event.instance_id, event.timestamp_ms,
                event.timestamp.isoformat(), dict(self.env)]


def test_the_event_and_env(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Reads, env={"BUCKET": "b1"}).create(id="m1", params={"materialId": "m1"})
    any_host.run_due()
    any_host.advance(MINUTE)  # its creation is START_MS: the run's clock has moved since
    s = inst.status()
    assert s.output == [{"materialId": "m1"}, "m1", START_MS, "2026-01-01T00:00:00+00:00",
                        {"BUCKET": "b1"}]


def test_env_defaults_to_empty(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Reads).create(id="e")
    any_host.run_due()
    any_host.advance(MINUTE)
    assert inst.status().output[-1] == {}


class _NoRun:
    """A Run that is never asked anything: reading it would raise AttributeError."""


def test_the_event_reads_nothing_unless_asked() -> None:
    e = WorkflowEvent(_NoRun(), {"x": 1})  # type: ignore[arg-type]
    assert e.payload == {"x": 1}
    with pytest.raises(AttributeError):
        e.instance_id  # noqa: B018
    with pytest.raises(AttributeError):
        e.timestamp  # noqa: B018


class Counted(WorkflowEntrypoint):
    made = 0

    def __init__(self) -> None:
        type(self).made += 1

    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        SEEN.append(id(self))
        step.sleep("one", "1 second")
        step.sleep("two", "1 second")
        return len(SEEN)


def test_a_fresh_instance_of_the_class_per_run(any_host: FakeHost, serve: Serve) -> None:
    Counted.made = 0
    inst = serve(Counted).create(id="c")
    any_host.run_due()
    any_host.advance(1000)
    any_host.advance(1000)
    assert inst.status().status == "complete"
    assert Counted.made == len(SEEN) == 3  # three runs: each its own object


class Sleeps(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        kind, value = event.payload
        if kind == "until-dt":
            value = datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
        elif kind == "delta":
            value = datetime.timedelta(milliseconds=value)
        if kind.startswith("until"):
            step.sleep_until("then", value)
        else:
            step.sleep("nap", value)
        return "woke"


@pytest.mark.parametrize(("kind", "value", "wake"), [
    ("sleep", "1 minute", START_MS + MINUTE),
    ("sleep", "2h", START_MS + 120 * MINUTE),
    ("sleep", 1500, START_MS + 1500),
    ("delta", 2500, START_MS + 2500),
    ("until", START_MS + DAY, START_MS + DAY),
    ("until-dt", START_MS + DAY, START_MS + DAY),
])
def test_sleeps(any_host: FakeHost, serve: Serve, kind: str, value: Any, wake: int) -> None:
    inst = serve(Sleeps).create(id="s", params=[kind, value])
    any_host.run_due()
    assert any_host.instance("flow", "s").backend.alarm == wake
    assert inst.status().status == "waiting"
    any_host.clock.jump(wake - any_host.clock.now() - 1)
    any_host.run_due()
    assert inst.status().status == "waiting"
    any_host.advance(1)
    assert inst.status().output == "woke"


class Naive(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        step.sleep_until("then", datetime.datetime(2030, 1, 1))  # noqa: DTZ001


@pytest.mark.parametrize(("cls", "params", "error"), [
    (Sleeps, ["sleep", "10 parsecs"], "step.sleep('nap')"),
    (Sleeps, ["sleep", -5], "step.sleep('nap')"),
    (Sleeps, ["until", "tomorrow"], "step.sleep_until('then'): when must be a datetime"),
    (Naive, None, "step.sleep_until('then'): a naive datetime"),
])
def test_a_bad_time_parks_the_instance_naming_the_call(
        any_host: FakeHost, serve: Serve, cls: Any, params: Any, error: str) -> None:
    inst = serve(cls).create(id="bad", params=params)
    any_host.run_due()
    s = inst.status()
    assert (s.status, s.state) == ("errored", "parked")
    assert s.error is not None and error in s.error


class Review(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        try:
            got = step.wait_for_event("review", type="reviewed", timeout=event.payload)
        except WorkflowTimeoutError as e:
            if event.payload == "1 hour":
                raise
            return ["timed out", str(e)]
        return ["got", got.payload, got.type, got.timestamp]


def test_a_wait_takes_the_event_within_its_timeout(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Review).create(id="w", params="1 day")
    any_host.run_due()
    assert inst.status().status == "waiting"
    any_host.advance(DAY - 1)
    inst.send_event(type="reviewed", payload={"ok": True})
    any_host.run_due()
    assert inst.status().output == ["got", {"ok": True}, "reviewed", None]


def test_a_none_payload_is_an_event_not_a_timeout(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Review).create(id="w", params="1 day")
    any_host.run_due()
    inst.send_event(type="reviewed")
    any_host.run_due()
    assert inst.status().output == ["got", None, "reviewed", None]


def test_the_timeout_raises_and_run_may_catch_it(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Review).create(id="w", params="1 day")
    any_host.run_due()
    any_host.advance(DAY)
    out = inst.status().output
    assert out[0] == "timed out"
    assert out[1] == "step.wait_for_event('review'): no event of type 'reviewed' came " \
                     "within 1 day"
    assert [r[1:3] for r in journal(any_host, "w")] == [("O", "reviewed")]


def test_the_timeout_uncaught_errors_the_instance(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Review).create(id="w", params="1 hour")
    any_host.run_due()
    any_host.advance(60 * MINUTE)
    s = inst.status()
    assert (s.status, s.state) == ("errored", "failed")
    assert s.error == ("WorkflowTimeoutError: step.wait_for_event('review'): no event of "
                       "type 'reviewed' came within 1 hour")


def test_the_wait_timeout_defaults_to_24_hours(any_host: FakeHost, serve: Serve) -> None:
    class Default(WorkflowEntrypoint):
        def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
            step.wait_for_event("review", type="reviewed")

    serve(Default).create(id="d")
    any_host.run_due()
    assert any_host.instance("flow", "d").backend.alarm == START_MS + DAY


class Raises(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        step.sleep("first", "1 second")
        kind = event.payload
        if kind == "non-retryable":
            raise NonRetryableError("rejected")
        if kind == "value":
            raise ValueError("boom")
        if kind == "bare":
            raise KeyError
        if kind == "wait-type":
            step.wait_for_event("review", type=5)  # type: ignore[arg-type]
        return "ok"


@pytest.mark.parametrize(("kind", "status", "state", "error"), [
    ("non-retryable", "errored", "failed", "NonRetryableError: rejected"),
    ("value", "errored", "failed", "ValueError: boom"),
    ("bare", "errored", "failed", "KeyError"),
    ("wait-type", "errored", "parked", "step.wait_for_event('review'): type must be a str"),
    ("none", "complete", "completed", None),
])
def test_exceptions_escaping_run_fail_it_and_the_runners_signals_park_it(
        any_host: FakeHost, serve: Serve, kind: str, status: str, state: str,
        error: str | None) -> None:
    inst = serve(Raises).create(id="x", params=kind)
    any_host.run_due()
    any_host.advance(1000)
    s = inst.status()
    assert (s.status, s.state) == (status, state)
    assert (s.error is None) if error is None else (s.error is not None and error in s.error)


def test_an_errored_instance_is_never_run_again(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Raises).create(id="x", params="value")
    any_host.run_due()
    any_host.advance(1000)
    assert inst.status().status == "errored"
    assert any_host.advance(DAY) <= 1  # at most its retention alarm
    assert inst.status().error == "ValueError: boom"


class Reorders(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        step.sleep(SEEN[0] if SEEN else "first", "1 second")
        return "ok"


def test_a_reordered_deploy_parks_it(any_host: FakeHost, serve: Serve) -> None:
    inst = serve(Reorders).create(id="r")
    any_host.run_due()
    SEEN.append("renamed")  # the code changed under the instance
    any_host.advance(1000)
    s = inst.status()
    assert (s.status, s.state) == ("errored", "parked")
