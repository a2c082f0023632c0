"""`wkhost serve`'s default compile cache: $WKHOST_COMPILED_DIR, else under
$XDG_CACHE_HOME, else under ~/.cache (engine/components.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wkhost.engine.components import default_cache_dir


def test_the_env_names_it_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("WKHOST_COMPILED_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("WKHOST_COMPILED_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "wkhost" / "compiled"
