"""A start's options through a real server: its Idempotency-Key header
(workflow/start_keys.py: the operators' client and a JSON request with the header; a
signal-with-start sent again delivers its event once), and debounce
(workflow/debounce.py: five starts in a window run once, with the last input)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from wkhost.cli.client import WorkflowAdmin

from .server import Server


def test_a_start_sent_again_with_its_key_answers_as_the_first(
        build_guest: Callable[[str], Path], tmp_path: Path) -> None:
    server = Server(tmp_path / "data",
                    {"carts": build_guest("examples/workflows/cart/app.py")}).start()
    try:
        admin = WorkflowAdmin(server.url, server.token)
        assert admin.start("carts", "c-1", None, idempotency_key="k-1").created
        assert admin.start("carts", "c-1", None, idempotency_key="k-1").created
        assert not admin.start("carts", "c-1", None, idempotency_key="k-2").created
        path = "/carts/c-2/wk-workflow/v1/start"
        body = json.dumps({"input": None, "event": {"name": "note", "payload": "ann"}})
        for _ in range(2):  # the first creates it with its event; the second is its retry
            st, _, out = server.request("POST", path, body.encode(), {
                "Content-Type": "application/json", "Idempotency-Key": "k-9"}, operator=True)
            assert st == 200 and json.loads(out)["created"] is True, out
        assert admin.status("carts", "c-2").events_pending == 1
        st, _, out = server.request("POST", path, json.dumps({"idempotency_key": "k-8"}).encode(),
                                    {"Content-Type": "application/json",
                                     "Idempotency-Key": "k-9"}, operator=True)
        assert st == 400 and "differ" in json.loads(out)["message"], out
    finally:
        server.stop()


def test_five_debounced_starts_run_once_with_the_last_input(
        build_guest: Callable[[str], Path], tmp_path: Path) -> None:
    server = Server(tmp_path / "data", {"orders": build_guest("kit_awaited")},
                    ["--fake-clock"]).start()
    try:
        admin = WorkflowAdmin(server.url, server.token)
        for i in range(1, 6):
            st = admin.start("orders", "o-1", i, debounce_ms=10_000)
            assert st.created == (i == 1), st
            server.advance(3_000)
        assert admin.status("orders", "o-1").positions == 0  # not begun: still in its window
        server.advance(10_000)
        admin.send_event("orders", "o-1", "ship", "now")
        done = admin.status("orders", "o-1", wait=20)
        assert (done.state, done.output, done.runs) == ("completed", {"order": 5}, 1), done
    finally:
        server.stop()
