"""Updates in the console, in a real browser (examples/workflows/cart/app.py, a cart on
`wkhost serve`): the operator sends one from the instance page, and the timeline draws
each update as a span from where the workflow took it to its handler's end, with its id,
argument and answer; a failed one in the failure's colour; one whose handler runs on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.e2e.conftest import MakeServer
from tests.e2e.workflow_support import Shop

from .console_support import WAIT_MS, console_url, log_in

CLS = "carts"


@pytest.fixture
def shop(make_server: MakeServer, build_guest: Callable[[str], Path], tmp_path: Path
         ) -> Iterator[Shop]:
    server = make_server(actors={CLS: build_guest("examples/workflows/cart/app.py")},
                         access={CLS: "internal"}, data=tmp_path / "data")
    yield Shop(server)


def test_an_operator_sends_an_update_and_the_timeline_draws_it(
        shop: Shop, context: BrowserContext) -> None:
    code, body = shop.wk("c1", "start", {"input": None, "wait_ms": 5_000}, cls=CLS)
    assert code == 200, body
    code, body = shop.wk("c1", "update", {"name": "add", "arg": "book", "id": "u-1",
                                          "wait_ms": 20_000}, cls=CLS)
    assert body["update"]["state"] == "completed", body
    code, body = shop.wk("c1", "update", {"name": "wrap", "arg": 3_600_000, "id": "u-2",
                                          "wait_ms": 2_000}, cls=CLS)
    assert body["update"]["state"] == "taken", body

    page = context.new_page()
    page.goto(console_url(shop, f"/instance?cls={CLS}&id=c1"))
    log_in(page, shop.server.token)
    lanes = page.locator("[data-testid=lane][data-kind=update]")
    expect(lanes).to_have_count(2, timeout=WAIT_MS)
    done = page.locator("[data-testid=lane][data-kind=update][data-step=add]")
    expect(done.locator("[data-testid=note]")).to_have_text('→ {"items":1,"total":400}')
    done.locator("[data-testid=span]").click()
    detail = page.locator("[data-testid=item-detail]")
    expect(detail.locator("[data-field='update id']")).to_have_text("u-1")
    expect(detail.locator("[data-field=arg]")).to_have_text('"book"')
    running = page.locator("[data-testid=lane][data-kind=update][data-step=wrap]")
    expect(running.locator("[data-testid=note]")).to_have_text("its handler runs")

    # The operator's own update, from the instance page: refused by the validator first
    # (nothing recorded), then accepted.
    page.locator("#action-update").click()
    page.locator("#arg-name").fill("add")
    page.locator("#arg-arg").fill("7")
    page.locator("#confirm-yes").click()
    expect(page.locator("#action-result")).to_contain_text(
        "Send update refused: ", timeout=WAIT_MS)
    expect(page.locator("#action-result")).to_contain_text("a sku is non-empty text")
    page.locator("#action-update").click()
    page.locator("#arg-name").fill("add")
    page.locator("#arg-arg").fill('"lamp"')
    page.locator("#arg-id").fill("u-3")
    page.locator("#confirm-yes").click()
    expect(page.locator("#action-result")).to_have_text(
        "Send update: update u-3 is accepted", timeout=WAIT_MS)
    code, body = shop.wk("c1", "update", {"id": "u-3"}, cls=CLS)
    assert body["update"]["name"] == "add", body  # it is taken once the wrapping ends
