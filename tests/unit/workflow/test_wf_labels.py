"""An instance's labels (core/labels.py, core/publish.py): given at its start and set by
its code (`wf.set_labels`), published with its state for the host's listing, written
and published only when they change (a replay sets them again and does nothing), kept
across a continue-as-new, and refused beyond the host's bounds."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.workflow import Run, WorkflowError
from wkguest.workflow.core import labels as guest_labels
from wkguest.workflow.testing import FakeBackend, FakeHost
from wkhost.storage import attributes as host_attributes

MIN = 60_000


def staged(wf: Run, inp: Any) -> Any:
    wf.set_labels({"stage": "packing", **(inp or {})})
    wf.step("pack", lambda: 1)
    wf.sleep("nap", MIN)
    wf.set_labels({"stage": "approval"})
    got = wf.wait_for_event("go", timeout_ms=100 * MIN)
    wf.set_labels({"stage": "done", "tier": None})
    return got


def backend(host: FakeHost) -> FakeBackend:
    return host.instance("w", "1").backend


def labels(host: FakeHost) -> dict[str, str]:
    p = backend(host).published
    assert p is not None
    return p[2]


def stored(host: FakeHost) -> dict[str, str] | None:
    got = backend(host).rows("SELECT labels FROM _wk_wf_labels")
    return None if not got else __import__("json").loads(got[0][0])


def watch_sql(b: FakeBackend) -> list[str]:
    """Every statement the runner sends from now on (FakeBackend's fault hook, never
    faulting)."""
    seen: list[str] = []
    b.fail_when = lambda method, sql: seen.append(sql) and False
    return seen


def test_start_labels_and_the_codes_are_published_with_the_state(any_host: FakeHost) -> None:
    any_host.serve("w", staged)
    c = any_host.client("w")
    c.start("1", {"tier": "gold"}, labels={"region": "eu"})
    assert backend(any_host).published == ("running", any_host.clock.now(), {"region": "eu"})
    any_host.run_due()
    assert c.status("1").state == "waiting"
    assert labels(any_host) == {"region": "eu", "stage": "packing", "tier": "gold"}
    any_host.advance(MIN)
    assert c.status("1").waiting_for == ("go",)
    assert labels(any_host) == {"region": "eu", "stage": "approval", "tier": "gold"}
    assert stored(any_host) == labels(any_host)
    c.send_event("1", "go", 1)
    any_host.run_due()
    assert c.status("1").state == "completed"
    assert labels(any_host) == {"region": "eu", "stage": "done"} == stored(any_host)


def test_a_replay_writes_and_publishes_nothing_and_the_state_keeps_its_time(
        host: FakeHost) -> None:
    host.serve("w", staged)
    c = host.client("w")
    c.start("1", {"tier": "gold"})
    host.run_due()
    b = backend(host)
    waiting_since = b.published[1] if b.published else None
    host.advance(MIN)  # the nap passes: still waiting, with new labels
    assert b.published is not None and b.published[0] == "waiting"
    assert b.published[1] == waiting_since  # the state began when it began
    assert b.published[2]["stage"] == "approval"
    publishes, seen = b.calls["publish"], watch_sql(b)
    for _ in range(3):  # events nobody waits for: each run replays every set_labels
        c.send_event("1", "nothing", None)
        host.run_due()
    assert b.calls["publish"] == publishes
    assert not [sql for sql in seen if "_wk_wf_labels" in sql]  # not even a read: warm


def test_a_fresh_instance_reads_the_labels_once_and_publishes_them_with_its_state() -> None:
    host = FakeHost(always_replay=True)
    host.serve("w", staged)
    c = host.client("w")
    c.start("1", {"tier": "gold"}, labels={"region": "eu"})
    host.run_due()
    host.advance(MIN)
    b = backend(host)
    seen = watch_sql(b)
    c.send_event("1", "nothing", None)
    host.run_due()
    reads = [sql for sql in seen if sql.startswith("SELECT labels FROM _wk_wf_labels")]
    assert len(reads) == 1 and not [s for s in seen if "INSERT OR REPLACE" in s
                                    and "_wk_wf_labels" in s]
    assert labels(host) == {"region": "eu", "stage": "approval", "tier": "gold"}


def test_an_instance_that_sets_no_label_asks_nothing_of_them(any_host: FakeHost) -> None:
    def plain(wf: Run, _: Any) -> Any:
        wf.step("a", lambda: 1)
        wf.sleep("nap", MIN)
        return wf.wait_for_event("go", timeout_ms=100 * MIN)

    any_host.serve("w", plain)
    c = any_host.client("w")
    c.start("1")
    seen = watch_sql(backend(any_host))
    any_host.run_due()
    any_host.advance(MIN)
    c.send_event("1", "go", 1)
    any_host.run_due()
    assert c.status("1").state == "completed"
    assert not [sql for sql in seen if "_wk_wf_labels" in sql]
    assert labels(any_host) == {}


def test_labels_go_on_across_a_continue_as_new(any_host: FakeHost) -> None:
    def chain(wf: Run, n: Any) -> Any:
        wf.set_labels({f"run{n}": "yes", "last": str(n)})
        wf.step("work", lambda: n)
        if n < 2:
            wf.continue_as_new(n + 1)
        return wf.wait_for_event("go", timeout_ms=100 * MIN)

    any_host.serve("w", chain)
    c = any_host.client("w")
    c.start("1", 0, labels={"region": "eu"})
    any_host.run_due()
    s = c.status("1")
    assert s.runs == 3 and s.state == "waiting", s
    want = {"region": "eu", "run0": "yes", "run1": "yes", "run2": "yes", "last": "2"}
    assert labels(any_host) == want == stored(any_host)


def test_a_query_replays_set_labels_without_writing(host: FakeHost) -> None:
    def asked(wf: Run, _: Any) -> Any:
        wf.set_labels({"stage": "one"})
        wf.query("stage", lambda arg: "one")
        return wf.wait_for_event("go", timeout_ms=100 * MIN)

    host.serve("w", asked)
    c = host.client("w")
    c.start("1")
    host.run_due()
    b = backend(host)
    publishes = b.calls["publish"]
    assert c.query("1", "stage") == "one"
    assert b.calls["publish"] == publishes and labels(host) == {"stage": "one"}


@pytest.mark.parametrize("given, named", [
    ({f"k{i}": "v" for i in range(17)}, "at most 16 labels"),
    ({"amount": 12}, "label 'amount': a value is text"),
    ({"": "v"}, "a label's key is text of 1 to 64 bytes"),
    ({"k" * 65: "v"}, "a label's key is text of 1 to 64 bytes"),
    ({"k": "v" * 257}, "a value has at most 256 bytes"),
    (["k=v"], "takes a map of text keys to text values, not list"),
])
def test_labels_beyond_the_hosts_bounds_park_the_instance_naming_the_call(
        any_host: FakeHost, given: Any, named: str) -> None:
    def wf(run: Run, _: Any) -> Any:
        run.set_labels(given)
        return run.step("never", lambda: 1)

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1")
    any_host.run_due()
    s = c.status("1")
    assert s.state == "parked" and "wf.set_labels" in (s.error or "") \
        and named in (s.error or ""), s.error


def test_a_start_with_bad_labels_is_refused_and_records_nothing(host: FakeHost) -> None:
    host.serve("w", staged)
    c = host.client("w")
    for bad in ({"k": 1}, {"k": None}, "k=v", {f"k{i}": "v" for i in range(17)}):
        with pytest.raises(WorkflowError) as e:
            c._call("1", "start", {"input": None, "labels": bad})  # as a raw message
        assert e.value.status == 400 and "'labels'" in str(e.value), e.value
    assert ("w", "1") not in host.instances


def test_an_existing_instance_keeps_its_labels(host: FakeHost) -> None:
    host.serve("w", staged)
    c = host.client("w")
    c.start("1", labels={"region": "eu"})
    assert not c.start("1", labels={"region": "us"}).created
    assert labels(host) == {"region": "eu"} == stored(host)


def test_the_bounds_are_the_hosts() -> None:
    assert (guest_labels.MAX_LABELS, guest_labels.MAX_KEY_BYTES,
            guest_labels.MAX_VALUE_BYTES) == (
        host_attributes.MAX_LABELS, host_attributes.MAX_KEY_BYTES,
        host_attributes.MAX_VALUE_BYTES)
