"""The replay core's boundaries: no bindings, no clock but the host's, no randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import wkguest.workflow

PACKAGE = Path(wkguest.workflow.__file__).parent
CORE = ["run", "core/frontier", "core/journal", "core/kinds", "runner", "core/schema",
        "core/store", "core/values", "cbor", "core/config", "errors", "protocol", "status",
        "core/cursor", "core/answers", "core/attempt", "core/waits", "core/runner",
        "core/settle", "core/instance"]
FORBIDDEN = {"time", "datetime", "random", "wkguest.sqlite", "wkguest.alarm",
             "wkguest.lifecycle", "wkguest.actors", "wkguest.actor", "wkguest._bindings",
             "wit_world", "sqlite3", "cbor2"}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


@pytest.mark.parametrize("module", CORE)
def test_core_module_does_its_io_only_through_the_backend(module: str) -> None:
    assert imports(PACKAGE / f"{module}.py") & FORBIDDEN == set()


def test_only_the_real_backend_and_serve_import_bindings_and_only_in_functions() -> None:
    for module in ("backend", "serve"):
        tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
        top = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
        assert not any(m.startswith("wkguest.") for m in top), module
