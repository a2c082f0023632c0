"""Seed 003's case through `wkhost serve`: IngestMaterial (examples/workflows/ingest),
written against the Cloudflare-shaped API, started by its app's `POST /materials/index`
and reviewed through the app, in both replay modes.

Pages are converted ten at a time in a loop of steps named "convert"; the converter is
busy the first time it sees a material's second batch, so that step takes two attempts
(10 seconds apart on the fake clock). Then the minute's sleep, then the wait for the
"reviewed" event with its day's timeout: reviewed ok it completes with its output; a
rejection errors it by the NonRetryableError; a review that never comes errors it by the
timeout; a batch the converter never takes runs the step out of its retries.
"""

from __future__ import annotations

import uuid

import pytest

from . import cloudflare_support
from .cloudflare_support import Example, waiting_for_event
from .workflow_support import DAY, finished, in_state

# The first test's setup builds the example's four components (cloudflare_support.cf_wasm)
# when the cache has none: minutes on a loaded machine, past pytest's 300 s default.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

cf_wasm = cloudflare_support.cf_wasm
example_modes = cloudflare_support.example_modes

CONVERT_LIMIT = 3  # flow.py: {"retries": {"limit": 3, ...}}: the retries after the first
# The runner records step.wait_for_event("review", type="reviewed") under its type.
REVIEW = "reviewed"


def converted_until_review(ex: Example, material: str) -> str:
    """Index `material` through the app; drive it through its conversion and its sleep,
    up to the wait for the review. Its instance id."""
    iid = ex.index(material)
    assert uuid.UUID(iid).version == 4, iid  # create()'s default id, as on Cloudflare
    ex.drive("ingest", iid, waiting_for_event)
    return iid


def test_reviewed_in_time_it_completes(example_modes: Example) -> None:
    ex = example_modes
    iid = converted_until_review(ex, "m-25")  # 25 pages: batches from 1, 11 and 21
    assert ex.cf("ingest", iid)["status"] == "waiting"
    steps = ex.summary("ingest", iid)
    assert steps[:6] == [("step", "count pages", "done", 1),
                         ("step", "convert", "done", 1),
                         ("step", "convert", "done", 2),  # busy once: retried
                         ("step", "convert", "done", 1),
                         ("sleep", "let the index settle", "done", 0),
                         ("wait", REVIEW, "waiting", 0)], steps
    calls = ex.calls()
    assert {k: n for k, n in calls.items() if k[1].startswith("m-25")} == {
        ("count", "m-25"): 1, ("convert", "m-25:1"): 1, ("convert", "m-25:11"): 2,
        ("convert", "m-25:21"): 1}, calls

    assert ex.ok("POST", f"/materials/{iid}/review", {"ok": True}) == {"sent": "reviewed"}
    s = ex.drive("ingest", iid, finished)
    assert (s["state"], s["output"]) == ("completed", {"pages": 25}), s
    st = ex.ok("GET", f"/materials/{iid}")
    assert st == {"id": iid, "status": "complete", "state": "completed",
                  "output": {"pages": 25}, "error": None}, st
    assert ex.summary("ingest", iid)[5] == ("wait", REVIEW, "done", 0)


def test_a_rejection_errors_it_by_the_non_retryable_error(example_modes: Example) -> None:
    ex = example_modes
    iid = converted_until_review(ex, "m-rejected-12")
    ex.ok("POST", f"/materials/{iid}/review", {"ok": False})
    s = ex.drive("ingest", iid, finished)
    assert (s["state"], s["error"]) == ("failed", "NonRetryableError: rejected"), s
    st = ex.ok("GET", f"/materials/{iid}")
    assert (st["status"], st["state"], st["output"]) == ("errored", "failed", None), st
    assert st["error"] == s["error"], st


def test_a_review_that_never_comes_times_out(example_modes: Example) -> None:
    ex = example_modes
    iid = converted_until_review(ex, "m-unread-5")
    wait = ex.steps("ingest", iid)[-1]
    assert (wait["kind"], wait["name"], wait["state"]) == ("wait", REVIEW, "waiting"), wait
    ex.server.advance(DAY - 120_000)  # the day is not up yet: still waiting
    assert waiting_for_event(ex.wait_for("ingest", iid, lambda s: True)), ex.steps("ingest", iid)
    s = ex.drive("ingest", iid, finished)  # the clock crosses the wait's deadline
    assert s["state"] == "failed", s
    assert s["error"].startswith("WorkflowTimeoutError: "), s  # raised by the wait, uncaught
    st = ex.ok("GET", f"/materials/{iid}")
    assert (st["status"], st["state"]) == ("errored", "failed"), st
    assert ex.summary("ingest", iid)[-1][:3] == ("wait", REVIEW, "timed-out")


def test_a_batch_never_converted_runs_out_of_retries(example_modes: Example) -> None:
    ex = example_modes
    iid = ex.index("m-stuck-30")
    s = ex.drive("ingest", iid, in_state("failed", "completed", "parked", "waiting"))
    assert s["state"] == "failed", s
    assert ex.summary("ingest", iid) == [
        ("step", "count pages", "done", 1), ("step", "convert", "done", 1),
        ("step", "convert", "failed", 1 + CONVERT_LIMIT)], ex.steps("ingest", iid)
    assert ex.calls()[("convert", "m-stuck-30:11")] == 1 + CONVERT_LIMIT
    assert ("convert", "m-stuck-30:21") not in ex.calls()  # run() stopped there
    assert ex.cf("ingest", iid)["status"] == "errored"
