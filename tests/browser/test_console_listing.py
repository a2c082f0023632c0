"""A workflow class in the console, in a real browser: the classes page counts its
instances by state (from the index), each count a link to those instances; its page
shows when each started, ended and how long it ran, filters by several states at once
and by an end of range, and reports what a new build would do to its instances."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import BrowserContext, expect

from tests.e2e.workflow_support import Shop, waiting_for

from .console_support import WAIT_MS, console_url, demo_order, log_in


def test_counts_by_state_and_each_instances_start_end_and_run(
        shop: Shop, context: BrowserContext) -> None:
    demo_order(shop, "done")
    for oid in ("open", "gone"):
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))
    assert shop.wk("gone", "terminate", {"reason": "test"})[0] == 200

    page = context.new_page()
    page.goto(console_url(shop))
    log_in(page, shop.server.token)
    counts = page.locator("[data-testid=class-row][data-cls=orders] [data-testid=state-count]")
    expect(counts).to_have_count(3, timeout=WAIT_MS)
    assert {c.get_attribute("data-state"): c.inner_text().split()[-1]
            for c in counts.all()} == {"completed": "1", "waiting": "1", "terminated": "1"}

    counts.and_(page.locator("[data-state=waiting]")).click()
    rows = page.locator("[data-testid=actor-row]")
    expect(rows).to_have_count(1, timeout=WAIT_MS)
    assert rows.first.get_attribute("data-id") == "open"
    expect(rows.first.locator("[data-testid=started]")).to_contain_text("Z")
    expect(rows.first.locator("[data-testid=ended]")).to_have_text("—")

    page.goto(console_url(shop, "/class?cls=orders"))
    page.select_option("#filter-status", ["completed", "terminated"])
    page.click("#filter-apply")
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    assert "status=completed%2Cterminated" in page.url  # several, in the URL
    done = page.locator("[data-testid=actor-row][data-id=done]")
    expect(done.locator("[data-testid=ended]")).to_contain_text("Z")
    expect(done.locator("[data-testid=ran]")).not_to_have_text("—")

    page.goto(console_url(shop, "/class?cls=orders&until=1"))  # before any of them
    expect(page.locator("#match-count")).to_contain_text("0 match", timeout=WAIT_MS)


def test_the_class_page_reports_what_a_new_build_would_do_to_its_instances(
        shop: Shop, context: BrowserContext, workflow_wasm: dict[str, Path]) -> None:
    for oid in ("w1", "w2"):
        shop.app_start(oid, cool_off_ms=0)
        shop.drive(oid, waiting_for("approved"))
    before = [shop.steps(oid) for oid in ("w1", "w2")]
    page = context.new_page()
    page.goto(console_url(shop, "/class?cls=orders"))
    log_in(page, shop.server.token)
    page.fill("#compat-wasm", str(workflow_wasm["orders_reordered"]))
    page.click("#compat-check")
    rows = page.locator("[data-testid=compat-row]")
    expect(rows).to_have_count(2, timeout=60_000)
    assert [r.get_attribute("data-verdict") for r in rows.all()] == ["reordered"] * 2
    expect(rows.first).to_contain_text("position 0 was recorded as step 'reserve'")
    expect(page.locator("[data-testid=compat-summary]")).to_contain_text(
        "2 instances: 0 replay, 2 would not")
    assert [shop.steps(oid) for oid in ("w1", "w2")] == before  # only read
    page.fill("#compat-wasm", "/nowhere/new.wasm")
    page.click("#compat-check")
    expect(page.locator("[data-testid=compat-error]")).to_contain_text(
        "/nowhere/new.wasm: no .wasm file there on the server")
