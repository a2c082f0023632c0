"""Labels on workflows through `wkhost serve` and the CLI: labels given at the start
(`workflow start --label`) and labels the code sets (`wf.set_labels`,
tests/guests/wf_labels.py) are both published with the instance's state, so that
`wkhost workflow list --label k=v` and `wkhost actors CLASS --label k=v` find them; the
listing flags of `workflow list` (--count, --order, --limit) and the one time grammar
of every --since (a span back counted on the server's clock: the test's fake one); and
after a restart, a fresh guest instance keeps the labels its start gave."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import MakeServer
from .server import REPO, Server

pytestmark = pytest.mark.e2e

TIMEOUT = 30.0
HOUR = 3_600_000


@pytest.fixture(scope="module")
def labels_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_labels")


def wkhost(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", *args, "--server", server.url,
           "--data", str(server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def ok(server: Server, *args: str) -> str:
    out = wkhost(server, *args)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def listed(server: Server, *args: str) -> list[str]:
    """The ids `workflow list tickets ARGS` prints, in its order."""
    return [line.split("\t")[0] for line in ok(server, "workflow", "list", "tickets",
                                                *args).splitlines()]


def wait_state(server: Server, tid: str, state: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        s = json.loads(ok(server, "workflow", "status", "tickets", tid, "--json"))
        if s["state"] == state:
            return
        time.sleep(0.05)
    raise AssertionError(f"{tid} not {state} in {TIMEOUT} s: {s}")


@pytest.mark.parametrize("mode", ["warm", "always-replay"])
def test_labels_from_the_start_and_from_the_code_are_listed(
        make_server: MakeServer, labels_wasm: Path, tmp_path: Path, mode: str) -> None:
    data = tmp_path / "data"
    extra = ["--always-fresh-instance"] if mode == "always-replay" else []

    def serve() -> Server:
        return make_server(actors={"tickets": labels_wasm}, access={"tickets": "internal"},
                           data=data, extra=extra)

    server = serve()
    acme = json.dumps({"customer": "acme"})
    ok(server, "workflow", "start", "tickets", "t1", "--label", "region=eu",
       "--label", "tier=gold")
    ok(server, "workflow", "start", "tickets", "t2", "--input", acme)  # its code's only
    ok(server, "workflow", "start", "tickets", "t3", "--input", acme, "--label", "region=us")
    for tid in ("t1", "t2", "t3"):
        wait_state(server, tid, "waiting")

    assert listed(server, "--label", "region=eu") == ["t1"]
    assert listed(server, "--label", "customer=acme") == ["t2", "t3"]
    assert listed(server, "--label", "stage=triage", "--label", "region=us") == ["t3"]
    assert ok(server, "actors", "tickets", "--label", "customer=acme").split() == ["t2", "t3"]
    assert ok(server, "actors", "tickets", "--label", "tier=gold").split() == ["t1"]
    assert ok(server, "workflow", "list", "tickets", "--label", "stage=triage",
              "--count") == "3\n"
    line = ok(server, "workflow", "list", "tickets", "--label", "region=eu")
    assert line.endswith("\tregion=eu stage=triage tier=gold\n"), line
    doc = json.loads(ok(server, "workflow", "list", "tickets", "--label", "tier=gold", "--json"))
    assert doc[0]["labels"] == {"region": "eu", "stage": "triage", "tier": "gold"}, doc

    # Three hours on the server's clock; t2's resolution begins its new state then.
    server.advance(3 * HOUR)
    ok(server, "workflow", "send-event", "tickets", "t2", "resolved", "--payload",
       '{"drop": true}')
    wait_state(server, "t2", "completed")
    assert listed(server, "--since", "2h") == ["t2"]
    assert ok(server, "actors", "tickets", "--since", "2h", "--count") == "1\n"
    assert listed(server, "--until", "2h") == ["t1", "t3"]
    assert listed(server, "--label", "stage=closed", "--label", "customer=done") == ["t2"]
    assert "event" in ok(server, "audit", "--since", "2h", "--target", "tickets/t2")
    page = wkhost(server, "workflow", "list", "tickets", "--order", "newest", "--limit", "2")
    assert [x.split("\t")[0] for x in page.stdout.splitlines()][0] == "t2"
    assert "more may follow: --after " in page.stderr, page.stderr
    after = page.stderr.rsplit("--after ", 1)[1].strip()
    assert len(listed(server, "--order", "newest", "--after", after)) == 1

    # A restart: each instance's next event runs in a fresh guest instance, which reads
    # its stored labels again: those its start gave stay beside those its code sets.
    server.stop()
    server = serve()
    ok(server, "workflow", "send-event", "tickets", "t3", "resolved")
    wait_state(server, "t3", "completed")
    assert listed(server, "--label", "region=us", "--label", "stage=closed",
                  "--label", "customer=acme") == ["t3"]
    assert listed(server, "--label", "region=eu", "--label", "stage=triage") == ["t1"]


def test_bad_labels_are_refused_before_anything_is_sent(
        make_server: MakeServer, labels_wasm: Path) -> None:
    server = make_server(actors={"tickets": labels_wasm}, access={"tickets": "internal"})
    bad = wkhost(server, "workflow", "start", "tickets", "t9", "--label", "k=" + "v" * 257)
    assert bad.returncode == 2 and "--label: label 'k'" in bad.stderr, bad.stderr
    bad = wkhost(server, "workflow", "list", "tickets", "--label", "nolabel")
    assert bad.returncode == 2 and "--label" in bad.stderr, bad.stderr
    bad = wkhost(server, "workflow", "list", "tickets", "--since", "yesterday")
    assert bad.returncode == 2 and bad.stderr.startswith("wkhost: error: --since: ")
    assert len(bad.stderr.splitlines()) == 1
    assert wkhost(server, "workflow", "status", "tickets", "t9").returncode == 1  # unknown
