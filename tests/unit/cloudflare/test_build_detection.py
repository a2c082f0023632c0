"""A build detects a class made by `wkguest.cloudflare.serve` as a workflow class (it
declares wk-workflow/v1), from the app's source alone (host/engine/guest_sources.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wkguest.workflow.serve import PROTOCOL
from wkhost.engine.guest_sources import app_sources

ENTRY = ("class Ingest(WorkflowEntrypoint):\n"
         "    def run(self, event, step):\n"
         "        return event.payload\n\n")


@pytest.mark.parametrize("source", [
    "from wkguest.cloudflare import WorkflowEntrypoint, serve\n" + ENTRY
    + "Handler = serve(Ingest)\n",
    "from wkguest.cloudflare import WorkflowEntrypoint, serve as make\n" + ENTRY
    + "Handler = make(Ingest, env={'A': 1})\n",
    "from wkguest import cloudflare\nfrom wkguest.cloudflare import WorkflowEntrypoint\n"
    + ENTRY + "Handler = cloudflare.serve(Ingest)\n",
    "import wkguest.cloudflare as cf\nWorkflowEntrypoint = cf.WorkflowEntrypoint\n" + ENTRY
    + "Handler = cf.serve(Ingest)\n",
    "from wkguest.cloudflare.entrypoint import WorkflowEntrypoint, serve\n" + ENTRY
    + "Handler = serve(Ingest)\n",
])
def test_a_module_level_cloudflare_serve_declares_the_workflow_protocol(
        tmp_path: Path, source: str) -> None:
    (tmp_path / "app.py").write_text(source)
    assert app_sources(tmp_path / "app.py").protocols == {PROTOCOL}


def test_a_handler_imported_from_a_module_that_serves_one_is_followed(tmp_path: Path) -> None:
    (tmp_path / "flows.py").write_text("from wkguest.cloudflare import WorkflowEntrypoint, "
                                       "serve\n" + ENTRY + "Handler = serve(Ingest)\n")
    (tmp_path / "app.py").write_text("from flows import Handler\n")
    assert app_sources(tmp_path / "app.py").protocols == {PROTOCOL}


@pytest.mark.parametrize("source", [
    # the binding alone makes no workflow class: an app actor that creates instances
    "from wkguest import Actor, export\nfrom wkguest.cloudflare import Workflow\n"
    "INGEST = Workflow('ingest')\n\nclass A(Actor):\n    pass\n\nHandler = export(A)\n",
    # serve inside a function runs at no import
    "from wkguest.cloudflare import WorkflowEntrypoint, serve\n" + ENTRY
    + "def make():\n    return serve(Ingest)\n",
])
def test_anything_else_declares_nothing(tmp_path: Path, source: str) -> None:
    (tmp_path / "app.py").write_text(source)
    assert app_sources(tmp_path / "app.py").protocols == frozenset()
