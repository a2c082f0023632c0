"""Support for the console's browser tests and its screenshot: Debian's chromium driven
by Playwright's Python package, and the demo's shop served by a real `wkhost serve`.

Chromium runs as root here, with no network beyond the registries: it needs the flags in
CHROMIUM_ARGS, and a fresh profile (`--user-data-dir`, which Playwright takes as the
persistent context's directory) for each browser.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, Playwright

from tests.e2e.workflow_support import Shop, finished, waiting_for

SETUP = Path(__file__).with_name("setup_chromium.sh")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}
WAIT_MS = 20_000  # for anything the page shows after a poll (every 2 s)


def chromium() -> str:
    """The chromium binary; its absence is a failure that says how to install it."""
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError(f"chromium is missing: run {SETUP} (as root), as `make test` "
                           "does")
    return path


@contextlib.contextmanager
def browser(p: Playwright, profile: Path) -> Iterator[BrowserContext]:
    """A headless chromium with a fresh profile in `profile` (a new directory)."""
    ctx = p.chromium.launch_persistent_context(
        str(profile), executable_path=chromium(), headless=True, args=CHROMIUM_ARGS,
        viewport=VIEWPORT)  # type: ignore[arg-type]
    try:
        yield ctx
    finally:
        ctx.close()


def console_url(shop: Shop, path: str = "") -> str:
    return f"{shop.server.url}/_wk/console{path}"


def log_in(page: Page, token: str) -> None:
    """Fill the login form the page shows and send it."""
    page.fill("#token", token)
    page.click("#login button[type=submit]")


def demo_order(shop: Shop, oid: str, **knobs: Any) -> dict[str, Any]:
    """The demo's order with its charge failing twice and its pack trapping once, driven
    to the end (approved by ann)."""
    shop.app_start(oid, cool_off_ms=0, charge_failures=2, trap_in_pack=True, **knobs)
    shop.drive(oid, waiting_for("approved"))
    shop.approve(oid)
    return shop.drive(oid, finished)
