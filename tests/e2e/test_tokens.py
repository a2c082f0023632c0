"""Named tokens with roles on a real `wkhost serve --tokens-file`: an operator's token acts
and the audit log names it; a reader's sees (the listing, a status, the audit log, the
metrics) and is refused every move with 403, through the CLI and over HTTP; a token none
of the host's is refused with 401; a bad file stops `serve` before it starts."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from . import workflow_support
from .conftest import MakeServer
from .server import REPO
from .workflow_support import HOUR, INTERNAL, ORDER, Shop, in_state

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name
pytestmark = pytest.mark.e2e

ANN, RITA = "ann-secret-0123456789", "rita-secret-0123456789"


def cli(shop: Shop, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", *args, "--server", shop.server.url,
           "--token", token]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def as_(shop: Shop, token: str, method: str, path: str, body: bytes | None = None) -> int:
    status, _, _ = shop.server.request(method, path, body,
                                       {"Authorization": f"Bearer {token}"})
    return status


@pytest.fixture
def shop(make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> Shop:
    tokens = tmp_path / "tokens"
    rita = hashlib.sha256(RITA.encode()).hexdigest()
    tokens.write_text(f"ann operator {ANN}\nrita reader sha256:{rita}  # not her secret\n")
    actors = {name: workflow_wasm[name] for name in ("orders", "ledger", "app")}
    return Shop(make_server(actors=actors, access=INTERNAL,
                            extra=["--tokens-file", str(tokens)]))


def test_an_operator_acts_and_a_reader_only_sees(shop: Shop) -> None:
    order = json.dumps({**ORDER, "cool_off_ms": HOUR})
    started = cli(shop, ANN, "workflow", "start", "orders", "o1", "--input", order)
    assert started.returncode == 0, started.stderr
    shop.wait_for("o1", in_state("waiting"))

    listed = cli(shop, RITA, "workflow", "list", "orders")
    assert listed.returncode == 0 and "o1" in listed.stdout, listed
    status = cli(shop, RITA, "workflow", "status", "orders", "o1")
    assert status.returncode == 0 and "waiting" in status.stdout, status
    cancelled = cli(shop, RITA, "workflow", "cancel", "orders", "o1")
    assert cancelled.returncode != 0, cancelled
    assert "the token 'rita' is a reader's: it may look, not act" in cancelled.stderr
    assert shop.status("o1")["state"] == "waiting"

    for path in ("/_wk/actors/orders", "/_wk/metrics", "/_wk/audit?target=orders"):
        assert as_(shop, RITA, "GET", path) == 200, path
    assert as_(shop, RITA, "POST", "/orders/o1/wk-workflow/v1/status", b"\xa0") == 200
    for method, path in (("POST", "/orders/o1/wk-workflow/v1/cancel"),
                         ("POST", "/orders/o2/wk-workflow/v1/start"),
                         ("GET", "/app/shop/orders/o1"),  # a plain actor route, too
                         ("POST", "/_wk/audit/note")):
        assert as_(shop, RITA, method, path, b"\xa0") == 403, path
    assert as_(shop, "not-" + RITA, "GET", "/_wk/actors/orders") == 401

    shop.wk("o1", "event", {"name": "approved", "payload": {"by": "bo"}})  # the admin's
    rows = json.loads(shop.server.request("GET", "/_wk/audit?target=orders/o1",
                                          operator=True)[2])["entries"]
    assert [(e["action"], e["who"]) for e in reversed(rows)] == [
        ("start", "ann"), ("event", "admin")], rows  # the refused cancel did nothing


def test_a_bad_tokens_file_stops_serve_naming_its_line(tmp_path: Path,
                                                      workflow_wasm: dict[str, Path]) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ann operator {ANN}\nrita owner {RITA}\n")
    done = subprocess.run([sys.executable, "-m", "wkhost.cli", "serve", "--data",
                           str(tmp_path / "data"), "--port", "0", "--actor",
                           f"app={workflow_wasm['app']}", "--tokens-file", str(tokens)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (f"wkhost: error: --tokens-file {tokens}:2: the role is "
                                   "operator, reader or ingress:CLASS, not 'owner'")
