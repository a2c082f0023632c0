"""WorkflowAdmin.list (host/cli/client.py) on a real `wkhost serve`: it reads the host's
index as `wkhost workflow list` does (host/cli/instances.py), one request for the page,
and no instance runs an event for it (the server's wkhost_events_total stays)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wkhost.cli.client import WorkflowAdmin

from . import workflow_support
from .conftest import MakeServer
from .workflow_support import HOUR, INTERNAL, ORDER, Shop, in_state

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name


class Recording(WorkflowAdmin):
    """A WorkflowAdmin that notes the method and path of each request it sends."""

    def __init__(self, base_url: str, token: str) -> None:
        super().__init__(base_url, token)
        self.sent: list[tuple[str, str]] = []

    def _send(self, method: str, url: str, *args: Any, **kw: Any) -> tuple[int, bytes, str, str]:
        self.sent.append((method, url.removeprefix(self.base_url).split("?")[0]))
        return super()._send(method, url, *args, **kw)



def test_list_reads_the_index_in_one_request_and_wakes_no_instance(
        make_server: MakeServer, workflow_wasm: dict[str, Path]) -> None:
    actors = {name: workflow_wasm[name] for name in ("orders", "ledger", "app")}
    shop = Shop(make_server(actors=actors, access=INTERNAL))
    for oid in ("o1", "o2", "o3"):  # each then sleeps for an hour of the test's clock
        shop.admin.start("orders", oid, {**ORDER, "cool_off_ms": HOUR})
        shop.wait_for(oid, in_state("waiting"))
    shop.admin.cancel("orders", "o2")
    admin = Recording(shop.server.url, shop.server.token)
    before = shop.server.events_run()

    listed = admin.list("orders")
    assert [(i, s["state"]) for i, s in listed] == [
        ("o1", "waiting"), ("o2", "cancelled"), ("o3", "waiting")]
    assert all(set(s) == {"state", "updated_at", "labels", "started_at"} for _, s in listed)
    assert [i for i, _ in admin.list("orders", state="waiting")] == ["o1", "o3"]
    assert admin.list("orders", state="completed") == []
    assert admin.sent == [("GET", "/_wk/actors/orders")] * 3  # one a listing
    assert shop.server.events_run() == before

    admin.summary("orders", "o1")  # by contrast: asking an instance is an event of it
    assert shop.server.events_run() == before + 1
