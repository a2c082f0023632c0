"""The console's views in a real browser, over the demo's shop on `wkhost serve`: the
list's server-side filters and paging, the timeline of the demo's order (its failed
charges and its cut pack, each attempt a bar), and the operator's moves (each confirmed,
seen in the instance's status and in the audit log)."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.workflow_support import Shop, finished, waiting_for

from .console_support import WAIT_MS, console_url, log_in

QUIET_S = 20  # how long an open page over an unchanging instance is watched
HALF_DAY_MS = 12 * 3600 * 1000


def _logged_in(shop: Shop, context: BrowserContext, path: str) -> Page:
    page = context.new_page()
    page.goto(console_url(shop, path))
    log_in(page, shop.server.token)
    return page


def _overlap(a: Any, b: Any) -> bool:
    return bool(a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
                and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def _ids(page: Page) -> list[str]:
    return [r.get_attribute("data-id") or "" for r in
            page.locator("[data-testid=actor-row]").all()]


def test_the_lists_filters_and_pages_come_from_the_host(
        shop: Shop, context: BrowserContext) -> None:
    for oid in ("d1", "d2"):
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))
        shop.approve(oid)
        shop.drive(oid, finished)
    for oid in ("w1", "w2", "w3"):
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))
    page = _logged_in(shop, context, "/class?cls=orders")
    expect(page.locator("[data-testid=actor-row]")).to_have_count(5, timeout=WAIT_MS)
    assert _ids(page) == ["d1", "d2", "w1", "w2", "w3"]
    expect(page.locator("#match-count")).to_contain_text("5 match")

    page.select_option("#filter-status", "waiting")
    page.fill("#filter-limit", "2")
    page.click("#filter-apply")
    expect(page.locator("#match-count")).to_contain_text("3 match", timeout=WAIT_MS)
    assert "status=waiting" in page.url and "limit=2" in page.url, page.url
    assert _ids(page) == ["w1", "w2"]
    expect(page.locator("[data-testid=actor-row] [data-testid=state]")).to_have_text(
        ["waiting", "waiting"])
    page.click("#page-next")
    expect(page.locator("#match-count")).to_contain_text("1 on this page", timeout=WAIT_MS)
    assert _ids(page) == ["w3"]
    expect(page.locator("#page-next")).to_have_count(0)
    page.click("#page-first")
    expect(page.locator("[data-testid=actor-row]")).to_have_count(2, timeout=WAIT_MS)

    page.select_option("#filter-status", "completed")
    page.select_option("#filter-order", "-updated")
    page.fill("#filter-limit", "50")
    page.click("#filter-apply")
    expect(page.locator("#match-count")).to_contain_text("2 match", timeout=WAIT_MS)
    assert _ids(page) == ["d2", "d1"]  # newest first
    page.click("[data-testid=actor-row][data-id=d1] a")
    expect(page.locator("#summary [data-testid=state]")).to_have_text("completed",
                                                                        timeout=WAIT_MS)


def test_the_timeline_shows_each_attempt_of_the_demos_order(
        shop: Shop, context: BrowserContext) -> None:
    # Half a day's wait for "approved", so that the charge's attempts, a second or two
    # apart, fall within a pixel of each other: each must still be seen and clicked.
    shop.app_start("a1", cool_off_ms=0, charge_failures=2, trap_in_pack=True)
    shop.drive("a1", waiting_for("approved"))
    shop.advance(HALF_DAY_MS)
    shop.approve("a1")
    s = shop.drive("a1", finished)
    assert s["state"] == "completed", s
    page = _logged_in(shop, context, "/instance?cls=orders&id=a1")
    expect(page.locator("#summary [data-testid=state]")).to_have_text("completed",
                                                                        timeout=WAIT_MS)
    expect(page.locator("#output")).to_contain_text('"charge": "ch-a1"')

    charge = page.locator("[data-testid=lane][data-step=charge] [data-testid=attempt]")
    expect(charge).to_have_count(3)
    assert [b.get_attribute("data-outcome") for b in charge.all()] == [
        "failed", "failed", "returned"]
    assert "ledger /charge answered 5" in (charge.nth(0).get_attribute("title") or "")
    pack = page.locator("[data-testid=lane][data-step=pack] [data-testid=attempt]")
    assert [b.get_attribute("data-outcome") for b in pack.all()] == ["cut", "returned"]
    boxes = [b.bounding_box() for b in charge.all()]
    assert all(b is not None for b in boxes)
    xs = [b["x"] for b in boxes if b is not None]
    assert xs == sorted(xs), xs  # on one time axis, in their order
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), boxes

    charge.nth(1).click()
    detail = page.locator("[data-testid=attempt-detail]")
    expect(detail.locator("[data-field=attempt]")).to_have_text("2")
    expect(detail.locator("[data-field=outcome]")).to_have_text("failed")
    expect(detail.locator("[data-field=error]")).to_contain_text("ledger /charge answered 5")
    fuel = detail.locator("[data-field=fuel]").inner_text()
    assert int(fuel.replace(",", "")) > 0, fuel
    expect(detail.locator("[data-field=duration]")).to_contain_text(" ms")
    # The attempt raised: its traceback, from the workflow's own code down.
    tb = page.locator("[data-testid=attempt-traceback]")
    expect(tb).to_contain_text("Traceback (most recent call last):")
    expect(tb).to_contain_text(", in ledger")
    expect(tb).to_contain_text("RuntimeError: ledger /charge answered 5")
    charge.nth(2).click()  # it returned: no traceback
    expect(tb).to_have_count(0)
    pack.nth(0).click()
    expect(detail.locator("[data-field=error]")).to_contain_text("the guest raised SystemExit")

    received = page.locator("[data-testid=received]")
    expect(received).to_have_count(1)
    expect(received).to_contain_text("approved")
    expect(received).to_contain_text('{"by":"ann"}')


def test_moves_are_confirmed_then_seen_in_the_status_and_the_audit_log(
        shop: Shop, context: BrowserContext) -> None:
    shop.app_start("w1", cool_off_ms=0)
    shop.drive("w1", waiting_for("approved"))
    page = _logged_in(shop, context, "/instance?cls=orders&id=w1")
    state = page.locator("#summary [data-testid=state]")
    expect(state).to_have_text("waiting", timeout=WAIT_MS)

    assert offered(page) == ["event", "update", "pause", "restart", "cancel", "terminate"]
    page.click("#action-terminate")  # asked, then not confirmed: nothing happens
    expect(page.locator("#confirm")).to_be_visible()
    page.click("#confirm-no")
    expect(page.locator("#confirm")).to_be_hidden()

    _move(page, "pause", note="looking into it")
    expect(state).to_have_text("paused", timeout=WAIT_MS)
    assert shop.status("w1")["state"] == "paused"
    assert offered(page) == ["event", "update", "resume", "restart", "cancel", "terminate"]
    expect(page.locator("[data-testid=audit-row][data-action=pause]")).to_contain_text(
        "console: looking into it", timeout=WAIT_MS)
    _move(page, "resume")
    expect(state).to_have_text("waiting", timeout=WAIT_MS)

    _move(page, "event", name="approved", payload='{"by": "bo"}')
    s = shop.drive("w1", finished)
    assert s["state"] == "completed" and s["output"]["approved_by"] == "bo", s
    expect(state).to_have_text("completed", timeout=WAIT_MS)  # by the page's polling
    expect(page.locator("[data-testid=received]")).to_contain_text('{"by":"bo"}')

    assert offered(page) == ["restart"]  # all a finished instance takes
    _move(page, "restart", step="no such step")  # refused by the instance, and said so
    expect(page.locator("#action-result")).to_contain_text(
        "Restart refused: no-step: the instance has 0 position(s) named 'no such step'",
        timeout=WAIT_MS)
    rows = _audit(shop, "orders/w1")
    assert [(e["action"], e["status"], e["note"]) for e in reversed(rows)] == [
        ("pause", 200, "console: looking into it"), ("resume", 200, "console"),
        ("event", 200, "console"), ("restart", 404, "console")], rows
    assert rows[3]["state"] == "paused" and rows[1]["detail"]["name"] == "approved", rows


def offered(page: Page) -> list[str]:
    """The moves the page offers, once its bar has caught up with the state shown."""
    shown = page.locator("#summary [data-testid=state]").inner_text()
    expect(page.locator(f"#actions[data-state={shown}]")).to_have_count(1, timeout=WAIT_MS)
    ids = page.locator("#actions button").evaluate_all("bs => bs.map(b => b.id)")
    return [i.removeprefix("action-") for i in ids]


def test_an_open_page_runs_no_event_while_its_instance_does_not_change(
        shop: Shop, context: BrowserContext) -> None:
    shop.app_start("q1", cool_off_ms=0)
    shop.drive("q1", waiting_for("approved"))
    page = _logged_in(shop, context, "/instance?cls=orders&id=q1")
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "/api/version?" in r.url else None)
    expect(page.locator("#summary [data-testid=state]")).to_have_text("waiting",
                                                                    timeout=WAIT_MS)
    expect(page.locator("#live")).to_contain_text("live ·", timeout=WAIT_MS)  # polled once
    before = shop.server.events_run()
    page.wait_for_timeout(QUIET_S * 1000)  # (Playwright's: its events are taken meanwhile)
    assert len(polls) >= QUIET_S // 2 - 1, polls  # it polled every 2 s all along
    assert shop.server.events_run() == before  # and no instance ran an event for it

    assert shop.approve("q1", by="cy")[0] == 200  # a change: the page reads it again
    expect(page.locator("[data-testid=received]")).to_contain_text('{"by":"cy"}',
                                                                   timeout=WAIT_MS)


def _move(page: Page, action: str, note: str = "", **fields: str) -> None:
    """Ask for a move, fill its fields, confirm it, and wait for its answer."""
    page.click(f"#action-{action}")
    for name, value in fields.items():
        page.fill(f"#arg-{name}", value)
    if note:
        page.fill("#confirm-note", note)
    with page.expect_response(lambda r: r.url.endswith("/api/action")) as answered:
        page.click("#confirm-yes")
    assert answered.value.status == 200, answered.value.text()
    expect(page.locator("#confirm")).to_be_hidden()


def _audit(shop: Shop, target: str) -> list[dict[str, Any]]:
    status, _, body = shop.server.request("GET", f"/_wk/audit?target={target}",
                                          operator=True)
    assert status == 200, body
    entries: list[dict[str, Any]] = json.loads(body)["entries"]
    return entries
