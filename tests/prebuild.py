"""The suite's set-up: every component it serves, built and compiled before the tests run.

    .venv/bin/python -m tests.prebuild

`make test` runs this first and times it apart, as it does Chromium's and PostgreSQL's
set-up. The tests build the same sources with the same caches (tests/conftest.py:
WKHOST_CACHE_DIR, WKHOST_COMPILED_DIR), so each finds its component built and compiled
(the build's cache key is the sources' content, the compile's the component's); a
component not listed here is still built by the test that needs it, only later. Builds
run two at a time (componentize-py uses more than one core only part of the time).
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wkhost.engine.build import BuildError, cached_build
from wkhost.engine.components import load_component, make_engine

from tests.conftest import CACHE_DIR, REPO

COMPILED_DIR = REPO / ".cache" / "compiled"
# The apps the suite serves: its guests, the examples' actors, the test kit's stubs.
SOURCES = ["tests/guests/*.py", "examples/counter/app.py", "examples/workflows/*/app.py",
           "examples/workflows/orders/app_reordered.py", "examples/workflows/orders/app_v2.py",
           "examples/workflows/ingest/*.py", "host/testkit/stubs/stub_*.py",
           "tests/e2e/data/*/app.py"]
NOT_APPS = {"examples/workflows/ingest/flow.py", "host/testkit/stubs/stub_url.py"}


def apps() -> list[Path]:
    from wkguest.schedule import APP  # the schedule class, built at a schedule's serve

    found = {p for pattern in SOURCES for p in REPO.glob(pattern)} | {Path(APP)}
    return sorted(p for p in found if str(p.relative_to(REPO)) not in NOT_APPS)


def others() -> list[Path]:
    """The components the suite makes its own way: a probe built from an old commit's
    tree, and bench_conversion's guest, written by the bench."""
    from bench.bench_conversion import build_guest
    from tests.host.test_old_builds import build_old_probe

    return [build_old_probe(), build_guest()]


def main() -> int:
    began = time.monotonic()
    engine = make_engine()
    failed = []

    def one(app: Path) -> None:
        try:
            wasm = cached_build(app, CACHE_DIR)
        except BuildError as e:
            failed.append(f"{app.relative_to(REPO)}: {e}")
            return
        load_component(engine, wasm, COMPILED_DIR)

    todo = apps()
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, todo))
        for wasm in pool.submit(others).result():
            load_component(engine, wasm, COMPILED_DIR)
    print(f"== set-up: {len(todo) + 2} components built and compiled (cached by content) in "
          f"{time.monotonic() - began:.0f} s")
    for line in failed:  # the test that serves it fails too, with componentize-py's words
        print(f"   not built: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
