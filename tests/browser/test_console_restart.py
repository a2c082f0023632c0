"""A restart from a step in a real browser: the demo's order, its charge failing twice,
restarted from its charge on `wkhost serve`. The timeline still draws the three attempts
from before the restart, hatched and said so, before the one after it, and the positions
table counts them."""

from __future__ import annotations

from playwright.sync_api import BrowserContext, expect

from tests.e2e.workflow_support import Shop, finished

from .console_support import WAIT_MS, console_url, demo_order, log_in


def test_a_restart_from_a_step_keeps_its_attempts_on_the_timeline(
        shop: Shop, context: BrowserContext) -> None:
    assert demo_order(shop, "r1")["state"] == "completed"
    code, body = shop.wk("r1", "restart", {"step": "charge"})
    assert code == 200, body
    assert shop.drive("r1", finished)["state"] == "completed"

    page = context.new_page()
    page.goto(console_url(shop, "/instance?cls=orders&id=r1"))
    log_in(page, shop.server.token)
    lane = page.locator("[data-testid=lane][data-step=charge]")
    before = lane.locator("[data-testid=earlier-attempt]")
    expect(before).to_have_count(3, timeout=WAIT_MS)
    assert [b.get_attribute("data-outcome") for b in before.all()] == [
        "failed", "failed", "returned"]
    assert all("earlier" in (b.get_attribute("class") or "").split() for b in before.all())
    assert "before the restart at " in (before.nth(0).get_attribute("title") or "")
    after = lane.locator("[data-testid=attempt]")
    expect(after).to_have_count(1)
    expect(after).to_have_attribute("data-outcome", "returned")
    expect(lane.locator("[data-testid=note]")).to_have_text(
        '×3 before the restart · ×1 → {"charge_id":"ch-r1"}')
    xs = [b.bounding_box()["x"] for b in [*before.all(), after]]  # type: ignore[index]
    assert xs == sorted(xs) and xs[0] < xs[3], xs  # on the one axis, before the restart

    before.nth(0).click()
    detail = page.locator("[data-testid=attempt-detail]")
    expect(detail.locator("[data-field=outcome]")).to_have_text("failed")
    expect(detail.locator("[data-field=restart]")).to_contain_text("before the restart at ")
    expect(page.locator("[data-testid=attempt-traceback]")).to_contain_text(", in ledger")

    notify = page.locator("[data-testid=lane][data-step=notify] [data-testid=earlier-attempt]")
    expect(notify).to_have_count(1)
    row = page.locator("[data-testid=step-row][data-pos='4'] [data-testid=earlier-count]")
    expect(row).to_have_text(" (+3 before a restart or a rescue)")
