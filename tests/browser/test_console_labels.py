"""The console's class page in a real browser: a label filter (several K=V at once) and an
id search (the ids that begin with it), both filtered by the host's listing, in
bookmarkable URLs that paging keeps; a label shown on a row links to its filter. The
instances are workflows labelled at their start and by their own code
(tests/guests/wf_labels.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from wkhost.cli.client import WorkflowAdmin

from tests.e2e.conftest import MakeServer
from tests.e2e.server import Server

from .console_support import WAIT_MS, log_in

# id: (input, labels given at the start); the code adds stage=triage and its customer
TICKETS = {"north-1": (None, {"region": "eu"}), "north-2": ({"customer": "acme"}, None),
           "south-1": ({"customer": "acme"}, {"region": "us"}),
           "south-10": (None, {"region": "eu"})}


@pytest.fixture
def tickets(make_server: MakeServer, build_guest: Callable[[str], Path],
            tmp_path: Path) -> Server:
    server = make_server(actors={"tickets": build_guest("wf_labels")},
                         access={"tickets": "internal"}, data=tmp_path / "data")
    admin = WorkflowAdmin(server.url, server.token)
    for tid, (inp, labels) in TICKETS.items():
        admin.start("tickets", tid, inp, labels=labels)
    deadline = time.monotonic() + 30
    while any(admin.status("tickets", t).state != "waiting" for t in TICKETS):
        assert time.monotonic() < deadline, "the tickets did not come to wait"
        time.sleep(0.05)
    return server


def _ids(page: Page) -> list[str]:
    return [r.get_attribute("data-id") or "" for r in
            page.locator("[data-testid=actor-row]").all()]


def _shows(page: Page, ids: list[str]) -> None:
    expect(page.locator("#match-count")).to_contain_text(f"{len(ids)} match",
                                                         timeout=WAIT_MS)
    expect(page.locator("[data-testid=actor-row]")).to_have_count(len(ids))
    assert _ids(page) == ids


def _apply(page: Page, prefix: str = "", labels: str = "") -> None:
    page.fill("#filter-prefix", prefix)
    page.fill("#filter-label", labels)
    page.click("#filter-apply")


def _query(page: Page) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(page.url).query)


def test_the_class_page_filters_by_label_and_searches_by_id(
        tickets: Server, context: BrowserContext) -> None:
    page = context.new_page()
    page.goto(f"{tickets.url}/_wk/console/class?cls=tickets")
    log_in(page, tickets.token)
    _shows(page, ["north-1", "north-2", "south-1", "south-10"])

    _apply(page, prefix="south-1")  # the ids that begin with it
    _shows(page, ["south-1", "south-10"])
    assert ("prefix", "south-1") in _query(page)

    _apply(page, labels="customer=acme, stage=triage")  # the code's labels, both at once
    _shows(page, ["north-2", "south-1"])
    assert [v for k, v in _query(page) if k == "label"] == ["customer=acme", "stage=triage"]
    expect(page.locator("#filter-label")).to_have_value("customer=acme, stage=triage")

    _apply(page, prefix="south", labels="region=eu")  # a start's label, with the search
    _shows(page, ["south-10"])

    # A label on a row links to its filter.
    _apply(page)
    _shows(page, ["north-1", "north-2", "south-1", "south-10"])
    page.click("[data-testid=actor-row][data-id=south-1] [data-testid=label]"
               ":has-text('region=us')")
    _shows(page, ["south-1"])
    assert _query(page) == [("cls", "tickets"), ("label", "region=us")]

    # A bookmark opens filtered; the next page keeps every filter.
    page.goto(f"{tickets.url}/_wk/console/class?cls=tickets&label=customer%3Dacme"
              "&label=stage%3Dtriage&limit=1")
    expect(page.locator("#match-count")).to_contain_text("2 match · 1 on this page",
                                                         timeout=WAIT_MS)
    assert _ids(page) == ["north-2"]
    page.click("#page-next")
    expect(page.locator("[data-testid=actor-row][data-id=south-1]")).to_have_count(
        1, timeout=WAIT_MS)
    expect(page.locator("#match-count")).to_contain_text("2 match")
    assert [v for k, v in _query(page) if k == "label"] == ["customer=acme", "stage=triage"]
