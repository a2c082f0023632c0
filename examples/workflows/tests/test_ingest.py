"""Seed 003's IngestMaterial in Cloudflare's shape (../ingest), tested with the kit's
Cloudflare spellings: mock_event, disable_sleeps, force_event_timeout, and Cloudflare's
status names in wait_for_status. The `pages` actor answers its steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from wkhost.testkit import Kit, WorkflowClass

EXAMPLES = Path(__file__).resolve().parent.parent


@pytest.fixture
def ingest(wk_kit: Kit) -> WorkflowClass:
    wk_kit.serve("pages", EXAMPLES / "ingest" / "pages.py", internal=True)
    return wk_kit.serve_workflow("ingest", EXAMPLES / "ingest" / "app.py", internal=True)


def test_a_material_is_converted_and_reviewed(ingest: WorkflowClass) -> None:
    material = ingest.instance("m-25")
    material.start({"materialId": "m-25"})
    material.wait_for_wait("reviewed")  # the 10 s retry delay and the minute's sleep pass
    material.send_event("reviewed", {"ok": True})
    assert material.wait_for_status("complete").output == {"pages": 25}
    batches = [s for s in material.steps() if s.name == "convert"]
    assert [b.attempts for b in batches] == [1, 2, 1]  # pages 11-20: busy once


def test_a_rejected_review_errors(ingest: WorkflowClass) -> None:
    material = ingest.instance("m-3")
    material.disable_sleeps()
    material.mock_event("reviewed", {"ok": False})
    material.start({"materialId": "m-3"})
    assert "rejected" in (material.wait_for_status("errored").error or "")


def test_no_review_in_time_errors(ingest: WorkflowClass) -> None:
    material = ingest.instance("m-4")
    material.force_event_timeout("reviewed")  # the wait's event type
    material.start({"materialId": "m-4"})
    assert "no event of type 'reviewed'" in (material.wait_for_status("errored").error or "")


def test_a_mocked_page_count_converts_one_batch(ingest: WorkflowClass) -> None:
    material = ingest.instance("m-big")
    material.mock_step_result("count pages", 3)
    material.start({"materialId": "m-big"})
    material.wait_for_wait("reviewed")
    assert [s.name for s in material.steps() if s.kind == "step"] == ["count pages", "convert"]
