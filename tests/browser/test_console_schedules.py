"""The console's schedules view, in a real browser, over `wkhost serve --schedules`: each
schedule's target, cron, state and next fires, listed from the host's index and
described again only when it changed; a pause made with the CLI shows on the open page."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect
from wkguest.schedule import APP

from tests.conftest import CACHE_DIR
from tests.e2e.reliability_support import Host
from tests.e2e.server import REPO

from .console_support import WAIT_MS, log_in

QUIET_S = 6  # three polls of the open view with nothing changed


@pytest.fixture
def host(build_guest: Callable[[str | Path], Path], tmp_path: Path) -> Iterator[Host]:
    build_guest(APP)  # serve then finds the schedule class built
    h = Host(tmp_path / "data", {"jobs": build_guest("wf_events")}, ["--schedules"],
             {"jobs": "internal"}, {"WKHOST_CACHE_DIR": str(CACHE_DIR)})
    with contextlib.ExitStack() as stopping:
        stopping.callback(h.close)
        yield h.start()


def schedule(host: Host, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "wkhost.cli", "schedule", *args,
                           "--server", host.url, "--data", str(host.data)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, (args, done.stdout, done.stderr)


def test_the_schedules_view_shows_each_schedule_and_follows_its_changes(
        host: Host, context: BrowserContext) -> None:
    schedule(host, "create", "nightly", "jobs", "0 3 * * *", "--input", '{"items": []}')
    schedule(host, "create", "hourly", "jobs", "0 * * * *", "--input", '{"items": []}')
    page = context.new_page()
    page.goto(f"{host.url}/_wk/console/")
    log_in(page, host.token)
    page.click("#nav-schedules")
    rows = page.locator("[data-testid=schedule-row]")
    expect(rows).to_have_count(2, timeout=WAIT_MS)
    nightly = page.locator("[data-testid=schedule-row][data-name=nightly]")
    expect(nightly).to_contain_text("jobs")
    expect(nightly).to_contain_text("0 3 * * * (UTC)")
    expect(nightly.locator("[data-testid=schedule-state]")).to_have_text("active")
    expect(nightly).to_contain_text("03:00:00.000Z")  # its next fires, in UTC

    expect(page.locator("#live")).to_contain_text("live ·", timeout=WAIT_MS)
    before = host.events_run()
    page.wait_for_timeout(QUIET_S * 1000)
    assert host.events_run() == before  # nothing changed: no schedule described again

    schedule(host, "pause", "nightly")
    expect(nightly.locator("[data-testid=schedule-state]")).to_have_text("paused",
                                                                         timeout=WAIT_MS)
    expect(page.locator("[data-testid=schedule-row][data-name=hourly] "
                        "[data-testid=schedule-state]")).to_have_text("active")
