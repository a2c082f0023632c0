"""Workflow commands against a class that is not a workflow class (Hardening II, item 1):
the component declares no wk-workflow/v1 (`wkhost build` writes the declaration only for
a class made with workflow.serve), so the host runs none of its code, and the CLI says
"not a workflow class"."""

from __future__ import annotations

import subprocess
import sys

from . import workflow_support
from .server import REPO
from .workflow_support import ShopFactory

workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory


def wk(shop: workflow_support.Shop, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "wkhost.cli", "workflow", *args,
           "--server", shop.server.url, "--data", str(shop.server.data)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)


def test_workflow_commands_against_a_plain_class_run_none_of_its_code(
        shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    before = shop.calls()
    ledger_ids = shop.actor_ids("ledger")
    for args in (["status", "ledger", "main"], ["start", "ledger", "fresh", "--input", "{}"],
                 ["send-event", "ledger", "main", "approved"], ["cancel", "ledger", "main"],
                 ["steps", "ledger", "main"]):
        out = wk(shop, *args)
        assert out.returncode == 1, (args, out.returncode, out.stdout, out.stderr)
        assert "not a workflow class" in out.stderr, (args, out.stderr)
        assert out.stdout == "", (args, out.stdout)
    assert shop.calls() == before  # the ledger counted nothing: its handler never ran
    assert shop.actor_ids("ledger") == ledger_ids  # and "fresh" was never made
    # The workflow class itself still answers.
    out = wk(shop, "start", "orders", "o1", "--input", '{"item": "book", "qty": 1}')
    assert out.returncode == 0, out.stderr
