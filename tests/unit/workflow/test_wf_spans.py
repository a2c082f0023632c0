"""Each step attempt's span (core/spans.py), on the FakeBackend: in the trace kept as its
run began, with its name, position, attempt, outcome and fuel, a failed attempt's
exception on it; nothing traced or written, and the host asked once, when it does not
trace."""

from __future__ import annotations

from typing import Any

from wkguest.workflow import Run, cbor
from wkguest.workflow.status import PREFIX
from wkguest.workflow.testing import FakeHost

START = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


TRIES: list[int] = []  # the charges tried, over the workflow's replays


def flaky(run: Run, _: Any) -> Any:
    def charge() -> str:
        TRIES.append(1)
        if len(TRIES) == 1:
            raise ConnectionError("the bank refused")
        return "charged"

    run.step("reserve", lambda: "reserved")
    return run.step("charge", charge, attempts=3, backoff_ms=1000)


def run_flaky(host: FakeHost) -> Any:
    """Start "w/1" and run it to its end (its retry 1 s after): its FakeBackend."""
    TRIES.clear()
    host.serve("w", flaky)
    host.client("w").start("1")
    for _ in range(5):
        host.run_due()
        host.clock.jump(2000)
    assert host.client("w").status("1").output == "charged"
    return host.instance("w", "1").backend


def test_each_attempt_is_a_span_in_the_trace_its_run_began_in(host: FakeHost) -> None:
    host.traceparent = START
    b = run_flaky(host)
    run_id = host.client("w").status("1").run_id
    assert b.rows("SELECT run_id, traceparent FROM _wk_wf_trace") == [(run_id, START)]
    names = [(s[0], s[2]["wkhost.workflow.attempt"], s[3]["wkhost.workflow.outcome"])
             for s in b.spans]
    assert names == [("step reserve", "1", "returned"), ("step charge", "1", "failed"),
                     ("step charge", "2", "returned")]
    assert {s[1] for s in b.spans} == {START}
    reserve, failed, returned = b.spans
    assert reserve[2] == {"wkhost.workflow.run_id": run_id,
                          "wkhost.workflow.position": "0", "wkhost.workflow.attempt": "1"}
    assert int(reserve[3]["wkhost.fuel"]) >= 0 and reserve[4] is None
    kind, message, stack = failed[4]
    assert (kind, message) == ("ConnectionError", "the bank refused")
    assert "in charge" in stack and stack.endswith("ConnectionError: the bank refused\n")
    assert returned[4] is None


def test_untraced_nothing_is_asked_twice_read_or_written(host: FakeHost) -> None:
    b = run_flaky(host)
    assert b.spans == [] and (b.calls["tracing"], b.calls["trace_current"]) == (1, 0)
    assert b.rows("SELECT count(*) FROM _wk_wf_trace") == [(0,)]


def test_a_run_that_ends_in_its_start_writes_no_trace(host: FakeHost) -> None:
    """A waiting start's run runs in the start's event: its trace is written only if it
    goes on in a later one (it does above: its retry is an alarm's)."""
    host.traceparent = START
    host.serve("w", lambda run, _: run.step("s", lambda: 1))

    def start(inst: Any) -> Any:
        return inst.protocol.handle("POST", PREFIX + "start",
                                    cbor.dumps({"input": 1, "wait_ms": 1000}), "operator")

    host._event("w", "1", start)  # noqa: SLF001 - the fake host's event, with its rules
    assert host.client("w").status("1").state == "completed"
    b = host.instance("w", "1").backend
    assert b.rows("SELECT count(*) FROM _wk_wf_trace") == [(0,)]
    assert [s[1] for s in b.spans] == [START]
