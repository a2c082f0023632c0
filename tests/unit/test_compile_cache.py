"""host/engine/components.py's compile cache, shared by every server: each compile says so, and the
cache keeps the artifacts used last, not every one ever compiled.

Real compiles of tiny components made from WAT (milliseconds each).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import wasmtime
from wkhost.engine import components as engine
from wkhost.engine.components import compile_classes, load_component, make_engine


def tiny(tmp_path: Path, n: int) -> Path:
    """A component of its own content (so of its own cache entry)."""
    path = tmp_path / f"c{n}.wasm"
    path.write_bytes(bytes(wasmtime.wat2wasm(f'(component (import "x{n}" (func)))')))
    return path


def artifacts(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("*.cwasm")}


def test_the_cache_keeps_the_artifacts_used_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "KEEP_COMPILED", 2)
    cache, e = tmp_path / "cache", make_engine(None)
    first, second, third = (tiny(tmp_path, n) for n in range(3))
    load_component(e, first, cache)
    made_first = artifacts(cache)
    load_component(e, second, cache)
    for n, path in enumerate(sorted(cache.glob("*.cwasm"))):
        os.utime(path, (1_000_000 + n, 1_000_000 + n))  # long unused, in some order
    load_component(e, first, cache)  # a use: the first is now the one used last
    load_component(e, third, cache)  # the third compiled: the second goes
    assert len(artifacts(cache)) == 2 and made_first <= artifacts(cache)
    load_component(e, second, cache)  # compiled again, as a new file would be
    assert len(artifacts(cache)) == 2


def test_each_compile_is_logged_with_its_class_and_a_cached_one_is_not(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wkhost.engine")
    classes = [("orders", tiny(tmp_path, 0)), ("ledger", tiny(tmp_path, 1))]
    compile_classes(make_engine(None), classes, tmp_path / "cache")
    lines = [r.getMessage() for r in caplog.records]
    for name in ("orders", "ledger"):
        assert any(line.startswith(f"compiling class {name} (0.0 MB)...") for line in lines)
        assert any(line.startswith(f"compiled class {name} in ") for line in lines)
    caplog.clear()
    compile_classes(make_engine(None), classes, tmp_path / "cache")
    assert not caplog.records
