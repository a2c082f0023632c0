"""host/engine/components.py's compile cache, shared by every server: each compile says so, and the
cache keeps the artifacts used last, not every one ever compiled, and every one in use.

Real compiles of tiny components made from WAT (milliseconds each).
"""

from __future__ import annotations

import logging
import os
import time
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
    monkeypatch.setattr(engine, "KEEP_USED_WITHIN_S", 0)  # the count alone
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


def age(cache: Path, seconds: float) -> None:
    """As if every artifact of `cache` was last used `seconds` ago."""
    then = time.time() - seconds
    for path in cache.glob("*.cwasm"):
        os.utime(path, (then, then))


def test_artifacts_used_lately_are_kept_past_the_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "KEEP_COMPILED", 2)
    cache, e = tmp_path / "cache", make_engine(None)
    for n in range(3):
        load_component(e, tiny(tmp_path, n), cache)
    assert len(artifacts(cache)) == 3  # all used within KEEP_USED_WITHIN_S
    age(cache, engine.KEEP_USED_WITHIN_S + 60)
    load_component(e, tiny(tmp_path, 3), cache)  # a compile prunes: the old past 2 go
    assert len(artifacts(cache)) == 2


def test_a_server_of_more_classes_than_the_count_compiles_nothing_when_it_starts_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # A prune after each compile dropped a class of the same server loaded earlier; at the
    # next start that one compiled and dropped another, start after start.
    monkeypatch.setattr(engine, "KEEP_COMPILED", 2)
    caplog.set_level(logging.INFO, logger="wkhost.engine")
    cache = tmp_path / "cache"
    classes = [(f"c{n}", tiny(tmp_path, n)) for n in range(4)]
    compile_classes(make_engine(None), classes, cache)
    assert len(artifacts(cache)) == 4
    for days in (2, 4):  # restarts days apart: nothing used meanwhile
        age(cache, days * 86_400)
        caplog.clear()
        compile_classes(make_engine(None), classes, cache)
        assert not [r for r in caplog.records if r.getMessage().startswith("compiling")]
        assert len(artifacts(cache)) == 4
    changed = [*classes[:3], ("c3", tiny(tmp_path, 9))]  # a deploy of a new c3
    age(cache, 86_400)
    compile_classes(make_engine(None), changed, cache)
    assert len(artifacts(cache)) == 4  # the old c3 went, the others stayed
