"""Fixtures for the console's browser tests: the shop on a real `wkhost serve`, and a
fresh headless chromium for each test (console_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, sync_playwright

from tests.e2e.conftest import MakeServer, make_server
from tests.e2e.workflow_support import INTERNAL, Shop, workflow_wasm

from .console_support import browser

__all__ = ["make_server", "workflow_wasm"]  # fixtures, used by those below


@pytest.fixture
def shop(make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> Shop:
    actors = {"orders": workflow_wasm["orders"], "ledger": workflow_wasm["ledger"],
              "app": workflow_wasm["app"]}
    return Shop(make_server(actors=actors, access=INTERNAL, data=tmp_path / "data"))


@pytest.fixture
def context(tmp_path: Path) -> Iterator[BrowserContext]:
    with sync_playwright() as p, browser(p, tmp_path / "chromium-profile") as ctx:
        yield ctx

