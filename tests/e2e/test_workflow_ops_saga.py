"""A rescue refused once compensations have run, through `wkhost serve` and `wkhost
workflow rescue`; the restart it points to runs the saga again from a step.

The guest is tests/guests/wf_saga.py: three tx steps that book a, b and c, each with its
compensation, then a charge that is declined (NonRetryable): the saga fails, its three
compensations run, and the instance is failed with them recorded.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from . import reliability_support
from .reliability_support import Host, Launch
from .server import REPO

pytestmark = pytest.mark.e2e

launch = reliability_support.launch  # the fixture, by name

CLS = "saga"
ENTRIES = [["a", 100], ["b", 20], ["c", 3]]


@pytest.fixture(scope="module")
def saga_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_saga")


def wkhost(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args, "--server", host.url,
           "--data", str(host.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def test_a_rescue_is_refused_after_compensations(launch: Launch, saga_wasm: Path,
                                                 tmp_path: Path) -> None:
    host = launch({CLS: saga_wasm}, tmp_path / "data", access={})
    code, st = host.wk(CLS, "s1", "start", {"input": {"entries": ENTRIES}})
    assert code == 200, st
    done = wkhost(host, "status", CLS, "s1", "--wait", "--timeout", "30")
    assert done.returncode == 10, (done.stdout, done.stderr)  # failed, compensated
    assert "(compensated: 3 compensation(s) ran)" in done.stdout, done.stdout

    out = wkhost(host, "rescue", CLS, "s1")
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert out.stdout == ""
    assert out.stderr.startswith(
        f"wkhost: {CLS}/s1: refused: the instance failed and its compensations have run "
        "(3 recorded): running it again from its failure would act on undone work. "
        "Restart it instead"), out.stderr
    after = wkhost(host, "status", CLS, "s1")
    assert (after.returncode, after.stdout) == (10, done.stdout)  # nothing changed

    # The way it points to: a restart from the charge keeps the three books, drops the
    # failure and the compensations, and runs the charge (declined again) and the
    # compensations once more.
    again = wkhost(host, "restart", CLS, "s1", "--from-step", "charge")
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert again.stdout.startswith(f"{CLS}/s1: running, 3 positions"), again.stdout
    end = time.monotonic() + 30
    while time.monotonic() < end:
        code, st = host.wk(CLS, "s1", "status")
        if st["state"] == "failed":
            break
        time.sleep(0.02)
    assert (st["state"], st["positions"]) == ("failed", 7), st
