"""The golden histories golden/history_v3_children.json: a parent recorded with child
workflows (each child two positions named `\\x02child CLS/ID`: a start, kind S, and a
wait for its notice, kind E once taken, q while pending; its registry row in
`_wk_wf_child`), and one of its children, finished, owing its notice (its
`_wk_wf_parent` row). Every later runner must replay them the same way: no recorded
start calls its child again, no recorded step runs again, and the owed notice goes out
as recorded.

Regenerate with WK_REGEN_GOLDEN=1 only for a deliberate change of the stored format (then
review the diff). The randomness (the run ids) is seeded while recording, so that today's
runner records the file again byte for byte. The histories: `golden_parent` has started
child kid/k-a (its start refused once, then retried) and taken its notice, spawned kid/k-b,
run a step, and joins k-b. k-b has completed while its parent refused calls: its notice
is owed, tried once (the child's history, under "child"). Then the retry delivered it: it
is pending in the parent's events (the parent's history, the file's top level). Replayed,
the parent takes the notice and completes, calling no one. Replayed by code that spawns
k-b before starting k-a, it stops as reordered, running nothing. The child, replayed at
its retry's time, sends the notice its parent's history holds, whatever code is deployed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from wkguest.workflow import Config, Run, cbor
from wkguest.workflow.runner import Runner
from wkguest.workflow.testing import (
    FakeBackend,
    FakeHost,
    export_history,
    insert_rows,
    seed,
    status_of,
)

GOLDEN = Path(__file__).parent / "golden" / "history_v3_children.json"
DAY = 86_400_000
RECORDING = {"on": False}
CHILDREN = "SELECT * FROM _wk_wf_child ORDER BY id"
PARENT = "SELECT * FROM _wk_wf_parent"
# The children's tables as recorded (children/registry.py makes them when first needed,
# not seed()).
CHILD_TABLE = ("CREATE TABLE IF NOT EXISTS _wk_wf_child (id TEXT PRIMARY KEY, cls TEXT NOT"
               " NULL, detached INTEGER NOT NULL, started_at TEXT, done_run TEXT, cancel"
               " INTEGER NOT NULL DEFAULT 0, tries INTEGER NOT NULL DEFAULT 0, next_try_at"
               " INTEGER, error TEXT)")
PARENT_TABLE = ("CREATE TABLE IF NOT EXISTS _wk_wf_parent (id INTEGER PRIMARY KEY CHECK"
                " (id = 1), cls TEXT NOT NULL, pid TEXT NOT NULL, detached INTEGER NOT NULL,"
                " notice INTEGER NOT NULL DEFAULT 0, tries INTEGER NOT NULL DEFAULT 0,"
                " next_try_at INTEGER, error TEXT)")


def live(name: str, value: Any) -> Any:
    def f() -> Any:
        if not RECORDING["on"]:
            raise AssertionError(f"recorded step {name!r} ran again on replay")
        return value
    return f


def kid(run: Run, inp: Any) -> Any:
    if inp.get("hold"):
        run.wait_for_event("go", DAY)
    return run.step("double", live("double", inp["n"] * 2))


def golden_parent(run: Run, inp: Any) -> Any:
    a = run.child("kid", "k-a", {"n": inp})
    h = run.spawn("kid", "k-b", {"n": inp + 1, "hold": True})
    mid = run.step("between", live("between", a + 1))
    b = run.join(h)
    return {"a": a, "mid": mid, "b": b}


def reordered_parent(run: Run, inp: Any) -> Any:
    h = run.spawn("kid", "k-b", {"n": inp + 1, "hold": True})
    run.child("kid", "k-a", {"n": inp})
    return run.join(h)


def record() -> dict[str, Any]:
    RECORDING["on"] = True
    try:
        host = FakeHost()
        host.serve("kid", kid)
        host.serve("parent", golden_parent, Config(backoff_ms=1000))
        host.refusing.add(("kid", "k-a"))  # the first start's call fails, and is retried
        host.client("parent").start("p-1", 20)
        host.run_due()
        host.refusing.clear()
        host.advance(1000)  # k-a started and done, k-b spawned and holding
        host.client("kid").send_event("k-b", "go", "now")
        host.refusing.add(("parent", "p-1"))
        host.fire("kid", "k-b")  # k-b completes; its notice is refused: owed
        child = _history(host, "kid", "k-b", "finished, its notice to parent/p-1 owed")
        host.refusing.clear()
        host.clock.jump(1000)
        host.fire("kid", "k-b")  # the notice's retry, delivered; the parent not yet run
        doc = _history(host, "parent", "p-1", "joining kid/k-b, whose notice has arrived")
        doc["child"] = child
        return doc
    finally:
        RECORDING["on"] = False


def _history(host: FakeHost, cls: str, id: str, note: str) -> dict[str, Any]:
    backend = host.instance(cls, id).backend
    doc = export_history(backend, note)
    if cls == "parent":
        doc["children"] = _rows(backend, CHILDREN)
    else:
        doc["parent"] = _rows(backend, PARENT)
    return doc


def _rows(backend: FakeBackend, sql: str) -> list[dict[str, Any]]:
    cur = backend.conn.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return doc


Sent = list[tuple[str, str, str, Any]]


def _seeded(doc: dict[str, Any], ref: tuple[str, str], table: str, ddl: str,
            rows: list[dict[str, Any]]) -> tuple[FakeBackend, Sent]:
    """A backend `ref` holding history `doc` (seed()'s tables) and the family table's
    rows, as recorded; its calls to other instances are answered 200 and kept."""
    backend = seed(doc)
    backend.ref = ref
    backend.conn.execute(ddl)
    insert_rows(backend, table, rows)
    sent: Sent = []

    def caller(cls: str, id: str, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        sent.append((cls, id, path, cbor.loads(body)))
        return 200, cbor.dumps({})

    backend.caller = caller
    return backend, sent


def _replay_parent(fn: Any) -> tuple[Any, FakeBackend, Sent]:
    doc = _golden()
    backend, sent = _seeded(doc, ("parent", "p-1"), "_wk_wf_child", CHILD_TABLE,
                            doc["children"])
    runner = Runner(fn, Config(), backend)
    runner.on_alarm()
    return status_of(runner), backend, sent


def test_the_golden_file_is_what_todays_runner_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "urandom", random.Random(25).randbytes)
    doc = record()
    if os.environ.get("WK_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    kept = _golden()
    for got, want, family in ((doc, kept, "children"), (doc["child"], kept["child"], "parent")):
        assert (got["steps"], got["events"], got[family]) == (
            want["steps"], want["events"], want[family])
        assert {k: got["instance"][k] for k in want["instance"]} == want["instance"]


def test_the_golden_histories_hold_a_parent_joining_and_a_child_owing_its_notice() -> None:
    doc = _golden()
    child = doc["child"]
    k_a, k_b = "\x02child kid/k-a", "\x02child kid/k-b"
    assert [(r["pos"], r["kind"], r["name"], r["attempts"]) for r in doc["steps"]] == [
        (0, "S", k_a, 2), (1, "E", k_a, 0), (2, "S", k_b, 1), (3, "S", "between", 1),
        (4, "q", k_b, 0)]
    assert (doc["instance"]["state"], doc["instance"]["waiting_for"]) == ("waiting", k_b)
    run_b = child["instance"]["run_id"]
    assert [(e["name"], json.loads(e["payload"])) for e in doc["events"]] == [
        (k_b, {"run_id": run_b, "state": "completed", "output": 42, "error": None})]
    run_p = doc["instance"]["run_id"]
    assert [(r["id"], r["cls"], r["started_at"], r["done_run"], r["cancel"])
            for r in doc["children"]] == [
        ("k-a", "kid", f"{run_p}/0", json.loads(doc["steps"][1]["result"])["run_id"], 0),
        ("k-b", "kid", f"{run_p}/2", run_b, 0)]
    assert (child["instance"]["state"], child["instance"]["output"]) == ("completed", "42")
    assert [(r["cls"], r["pid"], r["notice"], r["tries"], r["next_try_at"])
            for r in child["parent"]] == [("parent", "p-1", 0, 1, doc["now"])]


def test_the_recorded_parent_replays_and_takes_its_childs_notice() -> None:
    status, backend, sent = _replay_parent(golden_parent)
    assert status.state == "completed", status.error
    assert status.output == {"a": 40, "mid": 41, "b": 42}
    assert sent == []  # no recorded start called its child again
    assert backend.conn.execute("SELECT count(*) FROM _wk_wf_event").fetchone() == (0,)


def test_a_parent_that_spawns_its_children_in_another_order_stops_as_reordered() -> None:
    status, backend, sent = _replay_parent(reordered_parent)
    assert status.state == "parked"
    # Named as recorded, the reserved prefix aside (today's message shows it as \x02).
    error = (status.error or "").replace("\\x02", "").replace("\x02", "")
    assert error.startswith(
        "the code changed the order of its steps: position 0 was recorded as step "
        "'child kid/k-a', and the code now reaches step 'child kid/k-b' there."), error
    assert sent == []
    assert backend.conn.execute("SELECT count(*) FROM _wk_wf_event").fetchone() == (1,)


def never(run: Run, inp: Any) -> Any:
    raise AssertionError("a finished child's code ran")


def test_the_recorded_child_sends_its_owed_notice_at_its_retry_running_no_code() -> None:
    doc = _golden()
    child = doc["child"]
    backend, sent = _seeded(child, ("kid", "k-b"), "_wk_wf_parent", PARENT_TABLE,
                            child["parent"])
    runner = Runner(never, Config(), backend)
    runner.on_alarm()  # at the history's now: the retry is not due yet
    assert (sent, backend.alarm) == ([], child["parent"][0]["next_try_at"])
    backend.clock.jump(backend.alarm - backend.clock.now())
    runner.on_alarm()
    notice = {"cls": "kid", "id": "k-b", "run_id": child["instance"]["run_id"],
              "state": "completed", "output": "42", "tagged": False, "error": None}
    assert sent == [("parent", "p-1", "/wk-workflow/v1/child-done", notice)]
    # What the parent's history holds is this notice, as its child-done recorded it.
    held = json.loads(doc["events"][0]["payload"])
    assert (held["run_id"], held["state"], held["output"]) == (
        notice["run_id"], notice["state"], json.loads(notice["output"]))
    assert _rows(backend, "SELECT notice, tries FROM _wk_wf_parent") == [
        {"notice": 1, "tries": 1}]
