"""Shared fixtures: building guest components (content-hash cached in <repo>/.cache).

    def test_x(build_guest):
        wasm = build_guest("probe")              # tests/guests/probe.py
        wasm = build_guest("counter")            # examples/counter/app.py
        wasm = build_guest("tests/guests/x.py")  # a path, relative to the repo

A cold build takes ~5 s per guest; later runs (and other xdist workers) reuse the cached
component, which is rebuilt only when a source, the SDK, the WIT or componentize-py changes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from wkhost.build import BuildError, cached_build

REPO = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO / ".cache" / "components"

BuildGuest = Callable[[str | Path], Path]


def guest_source(name_or_path: str | Path) -> Path:
    """Where a guest's app module is: a path, tests/guests/<name>.py or
    examples/<name>/app.py. Raises FileNotFoundError if none exists."""
    s = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in s or s.endswith(".py"):
        path = Path(s) if Path(s).is_absolute() else REPO / s
        if path.is_file():
            return path
        raise FileNotFoundError(f"no guest at {path}")
    for path in (REPO / "tests" / "guests" / f"{s}.py", REPO / "examples" / s / "app.py"):
        if path.is_file():
            return path
    raise FileNotFoundError(f"no guest {s!r} in tests/guests/ or examples/{s}/app.py")


@pytest.fixture(scope="session")
def build_guest() -> BuildGuest:
    """build_guest(name_or_path) -> Path of the built component (cached by content)."""
    built: dict[Path, Path] = {}

    def build(name_or_path: str | Path) -> Path:
        app = guest_source(name_or_path)
        if app not in built:
            try:
                built[app] = cached_build(app, CACHE_DIR, progress=_progress)
            except BuildError as e:  # show componentize-py's output, not just the summary
                pytest.fail(f"building {app} failed: {e}\n{e.details}", pytrace=False)
        return built[app]

    return build


def _progress(line: str) -> None:
    print(f"[build_guest] {line}", file=sys.stderr)


@pytest.fixture(scope="session")
def counter_wasm(build_guest: BuildGuest) -> Path:
    """examples/counter/app.py, built."""
    return build_guest("counter")


@pytest.fixture(scope="session")
def probe_wasm(build_guest: BuildGuest) -> Path:
    """tests/guests/probe.py, built (see its docstring for the routes)."""
    return build_guest("probe")
