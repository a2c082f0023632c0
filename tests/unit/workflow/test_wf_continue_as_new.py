"""wf.continue_as_new(input): the run ends, and a fresh run of the same instance begins
from the next alarm, with the new input, an empty journal and a new run id. Both replay
modes (a warm cache, a fresh runner every event)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from wkguest.workflow import Config, Run, Status
from wkguest.workflow.testing import FakeBackend, FakeHost

from .conftest import Raw
from .test_wf_tx import LEDGER, booking, ledger

DAY = 86_400_000


def journal(b: FakeBackend) -> list[tuple[Any, ...]]:
    return list(b.rows("SELECT pos, kind, name FROM _wk_wf_step ORDER BY pos"))


def counting(calls: Counter[str]) -> Any:
    """Runs inputs 0, 1, 2: a step and a sleep each, then continues with the next."""
    def wf(run: Run, n: Any) -> Any:
        def work() -> Any:
            calls[f"work {n}"] += 1
            return n * 10
        got = run.step(f"work {n}", work)
        run.sleep("rest", 1000)
        if n < 2:
            run.continue_as_new(n + 1)
        return got
    return wf


def started(host: FakeHost, fn: Any, inp: Any = 0) -> Any:
    host.serve("w", fn, Config())
    c = host.client("w")
    c.start("1", inp)
    host.run_due()
    return c


def test_each_run_begins_with_its_input_an_empty_journal_and_a_new_run_id(
        any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()
    c = started(any_host, counting(calls))
    b = any_host.instance("w", "1").backend
    first = c.status("1")
    assert (first.runs, first.previous_run_id, first.positions) == (1, None, 2)
    assert [k for _, k, _ in journal(b)] == ["S", "w"]  # w: the sleep, pending
    ids = [first.run_id]
    for n in (1, 2):
        any_host.advance(1000)  # the sleep passes, the run continues, the next one begins
        s = c.status("1")
        assert (s.runs, s.previous_run_id) == (n + 1, ids[-1]), s
        assert s.run_id not in ids and s.state == "waiting"
        assert [name for _, _, name in journal(b)] == [f"work {n}", "rest"]  # no old rows
        ids.append(s.run_id)
    any_host.advance(1000)
    s = c.status("1")
    assert (s.state, s.output, s.runs, s.run_id) == ("completed", 20, 3, ids[-1])
    assert calls == {"work 0": 1, "work 1": 1, "work 2": 1}  # no old step ran again


def test_the_new_run_does_not_replay_the_old_runs_steps(any_host: FakeHost) -> None:
    """The old run's names are not the new one's: a replay of its journal would be a
    reorder (and park); the new run starts at position 0."""
    def wf(run: Run, inp: Any) -> Any:
        if inp == "a":
            run.step("only in a", lambda: 1)
            run.continue_as_new("b")
        return run.step("only in b", lambda: inp)

    c = started(any_host, wf, "a")
    s = c.status("1")
    assert (s.state, s.output, s.positions, s.runs) == ("completed", "b", 1, 2)
    assert [name for _, _, name in journal(any_host.instance("w", "1").backend)] == [
        "only in b"]


def test_pending_events_are_kept_and_taken_by_the_new_run(any_host: FakeHost) -> None:
    def wf(run: Run, inp: Any) -> Any:
        first = run.wait_for_event("go", DAY)
        if inp < 2:
            run.continue_as_new(inp + 1)
        return [inp, first]

    any_host.serve("w", wf, Config())
    c = any_host.client("w")
    c.start("1", 0)
    for p in ("x", "y", "z"):  # before any run: all three are pending
        c.send_event("1", "go", p)
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.output, s.runs) == ("completed", [2, "z"], 3), s
    assert any_host.instance("w", "1").backend.rows("SELECT count(*) FROM _wk_wf_event") == [
        (0,)]


def test_the_stream_continues_and_queries_answer_from_the_current_run(
        any_host: FakeHost) -> None:
    def wf(run: Run, inp: Any) -> Any:
        run.query("input", lambda _: inp)
        run.emit("run", inp)
        if inp < 1:
            run.continue_as_new(inp + 1)
        run.wait_for_event("end", DAY)

    c = started(any_host, wf)
    s = c.status("1")
    assert s.runs == 2 and c.query("1", "input") == 1
    events = c.events("1")
    assert [(e.offset, e.payload, e.pos) for e in events] == [(0, 0, 0), (1, 1, 0)]
    assert [e.run_id for e in events] == [s.previous_run_id, s.run_id]


def test_the_instances_own_tables_are_kept(any_host: FakeHost) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, inp: Any) -> Any:
        total = run.step(f"book {inp}", booking(calls, str(inp), 5), tx=LEDGER)
        if inp < 2:
            run.continue_as_new(inp + 1)
        return total

    c = started(any_host, wf)
    assert c.status("1").output == 15  # the ledger's total over the three runs
    assert ledger(any_host.instance("w", "1").backend) == {"0": 1, "1": 1, "2": 1}


def test_an_input_that_cannot_be_recorded_fails_the_workflow(any_host: FakeHost) -> None:
    def wf(run: Run, inp: Any) -> Any:
        run.continue_as_new({1, 2})  # a set: not a workflow value

    c = started(any_host, wf)
    s = c.status("1")
    assert s.state == "failed" and "continue_as_new's input" in (s.error or ""), s
    assert s.runs == 1


def test_an_instance_without_the_run_table_reports_one_run_and_continues(
        any_host: FakeHost) -> None:
    """An instance made by an older SDK has no _wk_wf_run: its status says 1 run, and its
    first continue makes the table."""
    def wf(run: Run, inp: Any) -> Any:
        run.wait_for_event("go", DAY)
        if inp == 0:
            run.continue_as_new(1)
        run.wait_for_event("go", DAY)
        return inp

    c = started(any_host, wf)
    inst = any_host.instance("w", "1")
    inst.backend.conn.execute("DROP TABLE _wk_wf_run")
    inst.runner.store.chain.known = None  # as an older SDK's runner would have it
    assert c.status("1").runs == 1
    c.send_event("1", "go")
    any_host.run_due()
    s = c.status("1")
    assert (s.state, s.runs, s.positions) == ("waiting", 2, 1), s


def test_the_status_through_the_protocol_and_wkhost_workflow_status(
        any_host: FakeHost, capsys: pytest.CaptureFixture[str]) -> None:
    """The status map has `runs` always and `previous_run_id` once continued; the host
    client reads it into the shared Status, which `wkhost workflow status` prints."""
    from wkhost.cli.status_text import print_status

    def wf(run: Run, inp: Any) -> Any:
        if inp == 0:
            run.continue_as_new(1)
        run.wait_for_event("go", DAY)

    any_host.serve("w", wf, Config())
    c = any_host.client("w")
    fresh = c.start("1", 0)
    print_status("w", "1", fresh, as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"] == 1 and "previous_run_id" not in doc
    any_host.run_due()
    code, m = Raw(any_host, "w")("1", "status")
    assert code == 200 and (m["runs"], m["previous_run_id"]) == (2, fresh.run_id)
    s = Status.from_map(m)
    print_status("w", "1", s, as_json=False)
    line = capsys.readouterr().out.splitlines()[0]
    assert line.endswith(f", run 2 (previous run {fresh.run_id})"), line
    print_status("w", "1", s, as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["runs"], doc["previous_run_id"], doc["run_id"]) == (2, fresh.run_id, s.run_id)
