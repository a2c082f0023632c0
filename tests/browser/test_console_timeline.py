"""The instance page's timeline in a real browser: seed 004's ParallelTest
(tests/guests/wf_parallel.py) on `wkhost serve`, with its group's branches, its sleep,
its wait, its race and its child each drawn; values shown as the workflow wrote them;
a wait cut short by a terminate shown as ended; and an axis that reads at any width."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.conftest import MakeServer
from tests.e2e.workflow_support import TIMEOUT, Shop

from .console_support import WAIT_MS, console_url, log_in

CLS = "parallel"
Status = dict[str, Any]


@pytest.fixture
def shop(make_server: MakeServer, build_guest: Callable[[str], Path], tmp_path: Path
         ) -> Iterator[Shop]:
    server = make_server(actors={CLS: build_guest("wf_parallel")}, access={CLS: "internal"},
                         data=tmp_path / "data")
    yield Shop(server)


def start(shop: Shop, oid: str, **inp: Any) -> None:
    code, body = shop.wk(oid, "start", {"input": inp}, cls=CLS)
    assert code == 200, body


def status(shop: Shop, oid: str) -> Status:
    code, body = shop.wk(oid, "status", cls=CLS)
    assert code == 200, body
    return dict(body)


def drive(shop: Shop, oid: str, done: Callable[[Status], bool], approve: bool = True
          ) -> Status:
    """Move the fake clock to each wake time, and send "approve" once it is waited
    for, until `done` holds."""
    end = time.monotonic() + TIMEOUT
    s = status(shop, oid)
    while not done(s):
        assert time.monotonic() < end, s
        if approve and "approve" in (s.get("waiting_for") or []):
            code, body = shop.wk(oid, "event", {"name": "approve", "payload": {"by": "ann"}},
                                 cls=CLS)
            assert code == 200, body
        elif s.get("wake_at") and s["wake_at"] > shop.now():
            shop.advance(s["wake_at"] - shop.now())
        else:
            time.sleep(0.02)
        s = status(shop, oid)
    return s


def page_of(shop: Shop, context: BrowserContext, oid: str) -> Page:
    page = context.new_page()
    page.goto(console_url(shop, f"/instance?cls={CLS}&id={oid}"))
    log_in(page, shop.server.token)
    expect(page.locator("#summary [data-testid=state]")).not_to_have_text("—",
                                                                          timeout=WAIT_MS)
    return page


def lane(page: Page, name: str) -> Locator:
    return page.locator(f"[data-testid=lane][data-step='{name}']")


def branches(page: Page) -> list[tuple[str, str, str]]:
    return [(b.get_attribute("data-step") or "", b.get_attribute("data-kind") or "",
             b.get_attribute("data-state") or "")
            for b in page.locator("[data-testid=branch]").all()]


def test_seed_004s_parallel_test_shows_its_branches_a_sleep_and_a_wait(
        shop: Shop, context: BrowserContext) -> None:
    start(shop, "p1", kid="k1")
    s = drive(shop, "p1", lambda s: s["state"] == "completed")
    assert s["output"]["approval"] == {"by": "ann"}, s
    page = page_of(shop, context, "p1")
    expect(page.locator("[data-testid=lane]").first).to_be_visible(timeout=WAIT_MS)

    # The group and its branches: each step branch's attempt a bar; the race's sleep
    # settled it, its wait lost.
    group = lane(page, "all(branch_a,branch_b)")
    expect(group).to_have_attribute("data-kind", "group")
    expect(group.locator("[data-testid=note]")).to_have_text("all of 2 [\"A\", b'\\x00B\\xff']")
    assert branches(page) == [("branch_a", "step", "done"), ("branch_b", "step", "done"),
                              ("late", "branch", "abandoned"), ("deadline", "sleep", "done")]
    for name in ("branch_a", "branch_b"):
        bar = page.locator(f"[data-testid=branch][data-step={name}] [data-testid=attempt]")
        expect(bar).to_have_attribute("data-outcome", "returned")
    expect(lane(page, "any(late,deadline)").locator("[data-testid=note]")).to_have_text(
        "any of 2 won by deadline: null")

    # The sleep, to its wake time; the wait, with the event it took.
    sleep = lane(page, "settle")
    expect(sleep).to_have_attribute("data-kind", "sleep")
    expect(sleep.locator("[data-testid=note]")).to_have_text(_clock_re("until "))
    sleep.locator("[data-testid=span]").click()
    expect(page.locator("[data-testid=item-detail] [data-field='wakes at']")).to_have_text(
        _when_re())
    expect(page.locator("[data-testid=item-detail] [data-field=lasted]")).to_have_text("1.50 s")
    wait = lane(page, "approve")
    expect(wait).to_have_attribute("data-kind", "wait")
    expect(wait.locator("[data-testid=note]")).to_have_text('took {"by":"ann"}')
    expect(wait.locator("[data-testid=mark]")).to_have_count(1)

    # The child, linked to its page; the emits, with their payloads from the stream.
    link = page.locator("[data-testid=lane][data-step='child parallel/k1'] a").first
    expect(link).to_have_attribute("href", "/_wk/console/instance?cls=parallel&id=k1")
    expect(lane(page, "BranchA_Done").locator("[data-testid=note]")).to_have_text('"A"')

    # Values as the workflow got them back, times with their zone.
    value = page.locator("[data-testid=step-row][data-pos='2'] [data-testid=value]")
    expect(value).to_have_text("[\"A\", b'\\x00B\\xff']")
    expect(page.locator("#steps")).not_to_contain_text('[["S"')
    expect(page.locator("#summary .facts")).to_contain_text(_when_re())
    expect(page.locator("[data-testid=legend] li")).to_have_count(16)
    _axis_reads_well(page)


def test_the_axis_reads_well_in_a_narrow_window(shop: Shop, context: BrowserContext) -> None:
    start(shop, "n1")
    drive(shop, "n1", lambda s: s["state"] == "completed")
    page = page_of(shop, context, "n1")
    page.set_viewport_size({"width": 400, "height": 900})
    expect(page.locator("[data-testid=lane]").first).to_be_visible(timeout=WAIT_MS)
    _axis_reads_well(page)
    width = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert width[0] <= width[1], width  # no part of the page is wider than the window


def test_a_sleep_then_a_wait_as_they_last_and_a_wait_ended_by_a_terminate(
        shop: Shop, context: BrowserContext) -> None:
    start(shop, "t1")
    drive(shop, "t1", lambda s: s["state"] == "waiting" and s["wake_at"] is not None)
    page = page_of(shop, context, "t1")
    sleep = lane(page, "settle")
    expect(sleep).to_have_attribute("data-state", "sleeping", timeout=WAIT_MS)
    expect(sleep.locator("[data-testid=span][data-kind=sleep]")).to_have_count(2)  # and planned

    drive(shop, "t1", lambda s: "approve" in s["waiting_for"], approve=False)
    wait = lane(page, "approve")
    expect(wait).to_have_attribute("data-state", "waiting", timeout=WAIT_MS)
    expect(wait.locator("[data-testid=note]")).to_have_text(_clock_re("deadline "))

    code, body = shop.wk("t1", "terminate", {"reason": "no one will approve"}, cls=CLS)
    assert code == 200 and body["state"] == "terminated", body
    expect(wait).to_have_attribute("data-state", "ended", timeout=WAIT_MS)
    expect(wait.locator("[data-testid=note]")).to_have_text(
        "ended: the instance was terminated")
    row = page.locator("[data-testid=step-row][data-pos='6'] [data-testid=state]")
    expect(row).to_have_text("ended")
    newest = lane(page, "operator").locator("[data-testid=mark]").first  # the audit's order
    expect(newest).to_have_attribute("title", _re(r"^terminate at .*Z: 200"), timeout=WAIT_MS)


def test_compensations_and_an_earlier_run(shop: Shop, context: BrowserContext) -> None:
    start(shop, "c1", rounds=1, fail=True)
    s = drive(shop, "c1", lambda s: s["state"] == "failed")
    assert s["runs"] == 2, s
    page = page_of(shop, context, "c1")
    expect(page.locator("[data-testid=run-note]")).to_contain_text(s["previous_run_id"])
    earlier = page.locator(f"[data-testid=lane][data-step='run {s['previous_run_id']}']")
    expect(earlier.locator("[data-testid=mark]")).to_have_attribute("title", _re("^RoundDone"))
    after = lane(page, "after").locator("[data-testid=attempt]")
    expect(after).to_have_count(2)
    assert [b.get_attribute("data-outcome") for b in after.all()] == ["failed", "failed"]
    undo = lane(page, "compensate:branch_a")
    expect(undo.locator(".tag")).to_have_text("compensation")
    expect(undo.locator("[data-testid=note]")).to_have_text('×1 → "A undone"')


# Stored texts (core/values.py's encoding) and what the page shows for each.
STORED = {
    '{"by":"ann"}': '{"by":"ann"}',
    '"\\u0000bAEL/"': "b'\\x00B\\xff'",  # bytes, tagged
    '"\\u0000s\\u0000x"': '"\\u0000x"',  # a str that began with U+0000, tagged
    "[NaN,Infinity,-Infinity,1.5]": "[nan,inf,-inf,1.5]",  # Python's json, not JSON
    '{"NaN":"Infinity"}': '{"NaN":"Infinity"}',  # the same words inside strings
    "18446744073709551615": "18446744073709551615",  # 2**64 - 1, not rounded
    '{"a": [1, {"b': None,  # cut short: not decoded
}


def test_values_are_decoded_as_the_workflow_wrote_them(
        shop: Shop, context: BrowserContext) -> None:
    start(shop, "v1")
    page = page_of(shop, context, "v1")
    shown = page.evaluate("""async (texts) => {
        const {decode, show} = await import("/_wk/console/static/dom.js");
        return texts.map((t) => { const got = decode(t); return got ? show(got.value) : null; });
    }""", list(STORED))
    assert dict(zip(STORED, shown, strict=True)) == STORED


def _axis_reads_well(page: Page) -> None:
    """Its tick labels differ, and no two of them overlap, at the page's width."""
    ticks = page.locator("[data-testid=tick]")
    expect(ticks.first).to_have_text("0")
    labels = ticks.all_inner_texts()
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    boxes = [b.bounding_box() for b in ticks.all()]
    spans = sorted((b["x"], b["x"] + b["width"]) for b in boxes if b is not None)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), (labels, spans)
    expect(page.locator("[data-testid=axis-start]")).to_have_text(_re(r"^\d\d:\d\d:\d\d\.\d{3}Z$"))


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _when_re() -> re.Pattern[str]:
    return re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z")


def _clock_re(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"^{prefix}\d\d:\d\d:\d\d\.\d{{3}}Z$")
