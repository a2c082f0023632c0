"""Seed 003's IngestMaterial, as the spec ports it, end to end on the FakeHost (both
replay modes): the pages converted in a loop with retries, the sleep, the reviewed event
within its timeout, a rejection as NonRetryableError (errored), no review (the timeout)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.cloudflare import (
    InstanceStatus,
    NonRetryableError,
    WorkflowEntrypoint,
    WorkflowEvent,
    WorkflowStep,
)
from wkguest.workflow.testing import FakeHost

from .conftest import DAY, MINUTE, Serve, journal

PAGES = {"m1": 25, "m2": 5}
CONVERTED: Counter[tuple[str, int]] = Counter()  # attempts per (material, first page)


@pytest.fixture(autouse=True)
def _reset() -> None:
    CONVERTED.clear()


def count_pages(material_id: str) -> int:
    return PAGES[material_id]


def convert_pages(material_id: str, first: int, last: int) -> list[int]:
    CONVERTED[(material_id, first)] += 1
    if first == 11 and CONVERTED[(material_id, first)] == 1:
        raise ConnectionError("the converter is busy")  # the second batch fails once
    return [first, last]


class IngestMaterial(WorkflowEntrypoint):
    def run(self, event: WorkflowEvent, step: WorkflowStep) -> Any:
        pages = step.do("count pages", lambda: count_pages(event.payload["materialId"]))
        for first in range(1, pages + 1, 10):
            # As the seed writes it: step.do calls the lambda before the loop moves on.
            step.do("convert", {"retries": {"limit": 3, "delay": "10 seconds",
                                            "backoff": "exponential"}},
                    lambda: convert_pages(event.payload["materialId"], first,  # noqa: B023
                                          first + 9))  # noqa: B023
        step.sleep("let the index settle", "1 minute")
        review = step.wait_for_event("review", type="reviewed", timeout="1 day")
        if not review.payload["ok"]:
            raise NonRetryableError("rejected")
        return {"pages": pages}


def converted(any_host: FakeHost, serve: Serve, material: str) -> Any:
    inst = serve(IngestMaterial, name="ingest").create(params={"materialId": material})
    any_host.run_due()
    if material == "m1":
        any_host.advance(10_000)  # the second batch's retry, 10 s after its failure
    assert inst.status().status == "waiting"  # the sleep
    any_host.advance(MINUTE)
    assert inst.status().status == "waiting"  # the review
    return inst


def test_ingest_reviewed_within_the_timeout_completes(any_host: FakeHost,
                                                      serve: Serve) -> None:
    inst = converted(any_host, serve, "m1")
    any_host.advance(DAY - MINUTE)
    inst.send_event(type="reviewed", payload={"ok": True})
    any_host.run_due()
    assert inst.status() == InstanceStatus("complete", None, {"pages": 25}, "completed")
    assert CONVERTED == {("m1", 1): 1, ("m1", 11): 2, ("m1", 21): 1}
    rows = journal(any_host, inst.id, "ingest")
    assert [r[1:] for r in rows] == [
        ("S", "count pages", 1), ("S", "convert", 1), ("S", "convert", 2),
        ("S", "convert", 1), ("Z", "let the index settle", 0), ("E", "reviewed", 0)]


def test_ingest_rejected_is_errored_by_the_non_retryable_error(any_host: FakeHost,
                                                              serve: Serve) -> None:
    inst = converted(any_host, serve, "m2")
    inst.send_event(type="reviewed", payload={"ok": False})
    any_host.run_due()
    assert inst.status() == InstanceStatus("errored", "NonRetryableError: rejected", None,
                                           "failed")
    assert CONVERTED == {("m2", 1): 1}


def test_ingest_never_reviewed_is_errored_by_the_timeout(any_host: FakeHost,
                                                        serve: Serve) -> None:
    inst = converted(any_host, serve, "m2")
    any_host.advance(DAY - 1)
    assert inst.status().status == "waiting"
    any_host.advance(1)
    s = inst.status()
    assert (s.status, s.state) == ("errored", "failed")
    assert s.error == ("WorkflowTimeoutError: step.wait_for_event('review'): no event of "
                       "type 'reviewed' came within 1 day")


def test_ingest_restarted_from_its_third_convert_reruns_only_from_there(
        any_host: FakeHost, serve: Serve) -> None:
    inst = converted(any_host, serve, "m1")
    inst.send_event(type="reviewed", payload={"ok": True})
    any_host.run_due()
    assert inst.status().status == "complete"
    inst.restart(from_step={"name": "convert", "count": 3})
    any_host.run_due()
    any_host.advance(MINUTE)  # the sleep again; the review given back is taken again
    assert inst.status() == InstanceStatus("complete", None, {"pages": 25}, "completed")
    assert CONVERTED == {("m1", 1): 1, ("m1", 11): 2, ("m1", 21): 2}
