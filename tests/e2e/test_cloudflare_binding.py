"""Each call of the Cloudflare-shaped binding (`wkguest.cloudflare.Workflow`) made from an
actor through `wkhost serve`: the example's `api` actor has a route for each
(examples/workflows/ingest/api.py). create (a default UUID id, a given id, an existing
id an error), create_batch, get (an unknown id an error), status in Cloudflare's names
in every state a test can reach, send_event, pause and resume, terminate (with and
without rollback), and restart from the start and from a named step.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from . import cloudflare_support
from .cloudflare_support import Example, waiting_for_event
from .workflow_support import finished, in_state

# The first test's setup builds the example's four components (cloudflare_support.cf_wasm)
# when the cache has none: minutes on a loaded machine, past pytest's 300 s default.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

cf_wasm = cloudflare_support.cf_wasm
example = cloudflare_support.example

ABC = ("a", "b", "c")


def keys(iid: str, batches: tuple[str, ...] = ABC) -> set[str]:
    return {f"{iid}:{b}" for b in batches}


def index_calls(ex: Example, iid: str, op: str = "index") -> dict[str, int]:
    return {k: n for (o, k), n in ex.calls().items() if o == op and k.startswith(f"{iid}:")}


# -- create, create_batch, get -----------------------------------------------------------

def test_create_with_the_default_id_and_a_given_one(example: Example) -> None:
    ex = example
    iid = ex.create("publish", materialId="m1")
    assert uuid.UUID(iid).version == 4 and str(uuid.UUID(iid)) == iid, iid
    assert ex.create("publish", "p-given", materialId="m2") == "p-given"
    for i in (iid, "p-given"):
        s = ex.drive("publish", i, finished)
        assert s["state"] == "completed", s
    assert ex.cf("publish", "p-given")["output"] == {"published": "m2"}
    assert ex.cf("publish", iid)["output"] == {"published": "m1"}


def test_create_with_an_existing_id_is_an_error(example: Example) -> None:
    ex = example
    ex.create("publish", "p-twice", materialId="m1", wait=True)
    ex.drive("publish", "p-twice", waiting_for_event)
    code, body = ex.api("POST", "/workflows/publish", {"id": "p-twice",
                                                       "params": {"materialId": "other"}})
    assert (code, body["kind"]) == (409, "exists"), (code, body)
    # the instance is the first one, untouched
    ex.move("publish", "p-twice", "event", {"type": "go"})
    assert ex.drive("publish", "p-twice", finished)["output"] == {"published": "m1"}


def test_create_batch(example: Example) -> None:
    ex = example
    ids = ex.ok("POST", "/workflows/publish/batch", [
        {"id": "b-1", "params": {"materialId": "one"}}, {"params": {"materialId": "two"}}])["ids"]
    assert ids[0] == "b-1" and uuid.UUID(ids[1]).version == 4, ids
    outputs = [ex.drive("publish", i, finished)["output"] for i in ids]
    assert outputs == [{"published": "one"}, {"published": "two"}], outputs


def test_create_batch_with_an_id_taken(example: Example) -> None:
    """As Cloudflare: an error for the id that exists (named); the others are created
    all the same, and the one that existed is left as it was."""
    ex = example
    ex.create("publish", "b-old", materialId="old")
    code, body = ex.api("POST", "/workflows/publish/batch", [
        {"id": "b-new", "params": {"materialId": "new"}},
        {"id": "b-old", "params": {"materialId": "ignored"}}])
    assert (code, body["kind"]) == (409, "exists") and "'b-old'" in body["error"], body
    assert ex.drive("publish", "b-new", finished)["output"] == {"published": "new"}
    assert ex.drive("publish", "b-old", finished)["output"] == {"published": "old"}


def test_get_an_unknown_id_is_an_error(example: Example) -> None:
    ex = example
    for path in ("/workflows/publish/nobody", "/materials/nobody"):
        code, body = ex.api("GET", path)
        assert (code, body["kind"]) == (404, "unknown"), (path, code, body)
    code, body = ex.api("POST", "/workflows/publish/nobody/event", {"type": "go"})
    assert (code, body["kind"]) == (404, "unknown"), (code, body)


# -- status in Cloudflare's names ----------------------------------------------------------

def test_status_running_then_complete(example: Example) -> None:
    """Right after create it is queued or already running (its first run is its own
    event); in a step's retry delay it is running; done, complete."""
    ex = example
    iid = ex.index("s-run-15")
    assert ex.cf("ingest", iid)["status"] in ("queued", "running")
    ex.wait_for("ingest", iid, lambda s: any(
        st["state"] == "retrying" for st in ex.steps("ingest", iid)))
    st = ex.cf("ingest", iid)
    assert (st["status"], st["state"]) == ("running", "running"), st
    ex.drive("ingest", iid, waiting_for_event)
    ex.ok("POST", f"/materials/{iid}/review", {"ok": True})
    ex.drive("ingest", iid, finished)
    assert ex.cf("ingest", iid)["status"] == "complete"


def test_send_event_pause_and_resume(example: Example) -> None:
    ex = example
    iid = ex.create("publish", "p-pause", materialId="m3", wait=True)
    ex.drive("publish", iid, waiting_for_event)
    assert ex.cf("publish", iid)["status"] == "waiting"
    paused = ex.move("publish", iid, "pause")
    assert (paused["status"], paused["state"]) == ("paused", "paused"), paused
    # an event sent while paused is recorded, and runs nothing until the resume
    assert ex.move("publish", iid, "event", {"type": "go", "payload": {"x": 1}}) == {
        "sent": "go"}
    assert ex.cf("publish", iid)["status"] == "paused"
    assert ("announce", "m3") not in ex.calls()
    resumed = ex.move("publish", iid, "resume")
    assert resumed["status"] in ("waiting", "running", "complete"), resumed
    s = ex.drive("publish", iid, finished)
    assert s["state"] == "completed", s
    assert ex.cf("publish", iid)["status"] == "complete"
    code, body = ex.api("POST", f"/workflows/publish/{iid}/event", {"type": "go"})
    assert (code, body["kind"]) == (409, "finished"), (code, body)


def test_errored_runs_the_rollbacks_newest_first(example: Example) -> None:
    ex = example
    iid = ex.create("publish", "p-fail", materialId="m4", fail=True)
    s = ex.drive("publish", iid, finished)
    assert s["state"] == "failed" and "the catalogue refused m4" in s["error"], s
    st = ex.cf("publish", iid)
    assert (st["status"], st["error"]) == ("errored", s["error"]), st
    names = [st["name"] for st in ex.steps("publish", iid)]
    rollbacks = [n for n in names if n.startswith("compensate:")]
    assert rollbacks == ["compensate:index c", "compensate:index b",
                         "compensate:index a"], names
    indexed, unindexed = ex.search_index()
    assert keys(iid) <= indexed
    # each rollback was told the workflow's error (the status adds what the rollbacks did)
    why = s["error"].removesuffix(" (compensated: 3 compensation(s) ran)")
    assert why != s["error"] and why.endswith("the catalogue refused m4\"}"), s
    assert {k: w for k, w in unindexed.items() if k.startswith(iid)} == dict.fromkeys(
        keys(iid), why), unindexed
    assert index_calls(ex, iid, "unindex") == dict.fromkeys(keys(iid), 1)


def test_parked_is_errored_with_its_state(example: Example) -> None:
    """A mistake in the code (an unknown config key) parks the instance: Cloudflare has
    no name for it, so its status is errored and its state says parked."""
    ex = example
    iid = ex.create("publish", "p-parked", materialId="m8",
                    announce_config={"retry": {"limit": 1}})
    s = ex.drive("publish", iid, in_state("parked", "failed", "completed"))
    assert s["state"] == "parked" and "unknown key(s) 'retry'" in s["error"], s
    st = ex.cf("publish", iid)
    assert (st["status"], st["state"], st["error"]) == ("errored", "parked", s["error"]), st
    assert ("announce", "m8") not in ex.calls()
    assert ex.move("publish", iid, "terminate")["status"] == "terminated"


@pytest.mark.parametrize("rollback", [False, True])
def test_terminate(example: Example, rollback: bool) -> None:
    ex = example
    iid = ex.create("publish", f"p-term-{rollback}", materialId="m5", wait=True)
    ex.drive("publish", iid, waiting_for_event)
    ex.move("publish", iid, "terminate", {"rollback": rollback})
    s = ex.drive("publish", iid, finished)
    assert s["state"] == ("cancelled" if rollback else "terminated"), s
    st = ex.cf("publish", iid)
    assert (st["status"], st["state"]) == ("terminated", s["state"]), st
    _, unindexed = ex.search_index()
    mine = {k: w for k, w in unindexed.items() if k.startswith(f"{iid}:")}
    assert mine == (dict.fromkeys(keys(iid)) if rollback else {}), mine  # error: None
    assert ("announce", "m5") not in ex.calls()


# -- restart -------------------------------------------------------------------------------

def test_restart_from_the_start(example: Example) -> None:
    ex = example
    iid = ex.create("publish", "p-again", materialId="m6")
    ex.drive("publish", iid, finished)
    assert index_calls(ex, iid) == dict.fromkeys(keys(iid), 1)
    ex.move("publish", iid, "restart", {})
    s = ex.drive("publish", iid, finished)
    assert (s["state"], s["output"]) == ("completed", {"published": "m6"}), s
    assert index_calls(ex, iid) == dict.fromkeys(keys(iid), 2)  # every step again


def review(ex: Example, iid: str) -> dict[str, Any]:
    ex.drive("ingest", iid, waiting_for_event)
    ex.ok("POST", f"/materials/{iid}/review", {"ok": True})
    return ex.drive("ingest", iid, finished)


def test_restart_from_a_named_step(example: Example) -> None:
    """From the second "convert" ({"name", "count"}), and from "index b" (a name: its
    first occurrence): the results before it are kept, it and what follows run again."""
    ex = example
    iid = ex.index("r-25")
    assert review(ex, iid)["output"] == {"pages": 25}
    ex.move("ingest", iid, "restart", {"from": {"name": "convert", "count": 2}})
    # The sleep and the wait come again; the review the wait had taken is given back
    # (the runner's restart from a step), so the wait takes it again at once.
    s = ex.drive("ingest", iid, finished)
    assert (s["state"], s["output"], s["events_pending"]) == ("completed", {"pages": 25}, 0), s
    assert [st[1:] for st in ex.summary("ingest", iid)] == [
        ("count pages", "done", 1), ("convert", "done", 1), ("convert", "done", 1),
        ("convert", "done", 1), ("let the index settle", "done", 0),
        ("reviewed", "done", 0)]
    calls = ex.calls()
    assert [calls[("count", "r-25")], calls[("convert", "r-25:1")],
            calls[("convert", "r-25:11")], calls[("convert", "r-25:21")]] == [1, 1, 3, 2]

    pid = ex.create("publish", "p-from-b", materialId="m7")
    ex.drive("publish", pid, finished)
    ex.move("publish", pid, "restart", {"from": "index b"})
    assert ex.drive("publish", pid, in_state("completed", "failed"))["state"] == "completed"
    assert index_calls(ex, pid) == {f"{pid}:a": 1, f"{pid}:b": 2, f"{pid}:c": 2}
