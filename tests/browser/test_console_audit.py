"""The console's audit log across the host's actors, in a real browser: every operator
action, newest first, who made it, its target linked to its instance's page; filtered by
target, action and a `since` of the time grammar, in the URL; paged by the host's
cursor."""

from __future__ import annotations

from playwright.sync_api import BrowserContext, expect

from tests.e2e.workflow_support import Shop, waiting_for

from .console_support import WAIT_MS, console_url, log_in


def test_the_audit_log_shows_every_action_filtered_and_paged(
        shop: Shop, context: BrowserContext) -> None:
    for oid in ("a1", "a2"):
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))
    assert shop.wk("a1", "pause")[0] == 200
    assert shop.wk("a2", "event", {"name": "approved", "payload": {"by": "bo"}})[0] == 200
    assert shop.wk("a1", "resume")[0] == 200

    page = context.new_page()
    page.goto(console_url(shop))
    log_in(page, shop.server.token)
    page.click("#nav-audit")
    rows = page.locator("[data-testid=audit-row]")
    expect(rows.first).to_be_visible(timeout=WAIT_MS)
    # Every action on the host: the moves above, newest first, and the test clock's moves
    # (`clock/advance`, as many as driving the orders took); the app's starts were calls
    # to app, not operator actions.
    actions = [r.get_attribute("data-action") for r in rows.all()]
    assert [a for a in actions if a != "clock/advance"] == ["resume", "event", "pause"], actions
    resume = page.locator("[data-testid=audit-row][data-action=resume]")
    expect(resume).to_contain_text("admin")
    expect(resume).to_contain_text("orders/a1")

    page.fill("#filter-target", "orders/a1")
    page.click("#filter-apply")
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    assert "target=orders%2Fa1" in page.url  # bookmarkable
    page.goto(console_url(shop, "/audit?action=event&since=1h"))
    expect(rows).to_have_count(1, timeout=WAIT_MS)
    expect(rows.nth(0)).to_contain_text("orders/a2")
    page.goto(console_url(shop, "/audit?since=yesterday-ish"))
    expect(page.locator("#view [role=alert]")).to_contain_text("since: yesterday-ish is not",
                                                         timeout=WAIT_MS)

    page.goto(console_url(shop, "/audit"))
    expect(rows.first).to_be_visible(timeout=WAIT_MS)
    page.click("[data-testid=audit-row][data-action=pause] a")
    expect(page.locator("#summary [data-testid=state]")).to_have_text("waiting",
                                                                        timeout=WAIT_MS)
    assert page.url == console_url(shop, "/instance?cls=orders&id=a1")
