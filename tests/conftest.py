"""Shared fixtures: building guest components (content-hash cached in <repo>/.cache), and
the guard that keeps each test's background work inside that test.

    def test_x(build_guest):
        wasm = build_guest("probe")              # tests/guests/probe.py
        wasm = build_guest("counter")            # examples/counter/app.py
        wasm = build_guest("tests/guests/x.py")  # a path, relative to the repo

A cold build takes ~5 s per guest; later runs (and other xdist workers) reuse the cached
component, which is rebuilt only when a source, the SDK, the WIT or componentize-py changes.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import apsw
import pytest
from wkhost.engine.build import BuildError, cached_build
from wkhost.storage.files import wait_new_files

REPO = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO / ".cache" / "components"
# The test kit's sandbox (wkhost.testkit, `--wk-sandbox`) builds with `wkhost build`'s
# cache, WKHOST_CACHE_DIR, and serves with `wkhost serve`'s compile cache,
# WKHOST_COMPILED_DIR: the suite's, so each component is built and compiled once a run.
os.environ.setdefault("WKHOST_CACHE_DIR", str(CACHE_DIR))
os.environ.setdefault("WKHOST_COMPILED_DIR", str(REPO / ".cache" / "compiled"))

BuildGuest = Callable[[str | Path], Path]


# Every test in these folders runs real components in real servers: it is `e2e` by where it
# lives, so a new file cannot forget the marker (22 files once had none) and `-m "not e2e"`
# selects the quick tests.
E2E_FOLDERS = tuple(REPO / "tests" / d for d in ("e2e", "cluster", "browser"))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in E2E_FOLDERS):
            item.add_marker(pytest.mark.e2e)


# Hostile-input tests log and assert on text with lone surrogates ("\udc80"). pytest-xdist
# sends each report from its worker as UTF-8, which cannot carry them: the worker crashed
# and took the run down. So what a report carries shows them escaped (\udc80), whatever
# test made them.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
        item: pytest.Item, call: pytest.CallInfo[None],
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    report.sections = [(title, _sendable(text)) for title, text in report.sections]
    if report.longrepr is not None and not _is_utf8(str(report.longrepr)):
        report.longrepr = _sendable(str(report.longrepr))
    return report


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _sendable(text: str) -> str:
    return text if _is_utf8(text) else text.encode("utf-8", "backslashreplace").decode()


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


# -- each test's background work stays in that test -------------------------------------
#
# The host does some of its work on threads of the whole process, off the caller's path:
# a new database's own syncs all run on one thread (wkhost.storage.actordb: wk-new-file-sync), and
# outgoing HTTP resolves names on a pool (wkhost.fetch.transport: wk-dns). Their queues outlive
# the test that filled them. A test that patches something process-wide (os.fsync,
# threading.Thread.start, socket.getaddrinfo) or records process-wide calls would
# otherwise see, or break, what earlier tests left queued: under load the syncs lag
# behind the tests by dozens of files (issue 22). So each test starts and ends with those
# queues empty, finds the process-wide settings a host makes as they were before it, and
# (in unit and host tests) leaves no thread or process of its own.

# Threads that live for the process by design, started once by whoever needs them first;
# what matters is that their queues are empty between tests, not that they end.
PROCESS_THREADS = ("wk-new-file-sync", "wk-dns", "wk-sql-watch", "wk-overlap")
# Where a test must also leave no thread, no child process and no environment change of
# its own behind. The e2e tests (servers in processes of their own, each with a thread
# draining its output) are held to the draining only, not yet to this.
STRICT = (REPO / "tests" / "unit", REPO / "tests" / "host")
# How long what a test has stopped may take to end: a bound for a thread that was told
# to stop and has not run since (a loaded machine), not a timing anything relies on.
ENDING_S = 10.0


@pytest.fixture(autouse=True)
def background_work_stays_in_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Autouse, so set up before the test's other function-scoped fixtures and torn down
    after them (after monkeypatch's undo, too): what the test's own fixtures stop counts
    as stopped; what its module- and session-scoped fixtures started was already there."""
    drain_background_work()  # nothing queued before this test runs inside it
    strict = request.path.is_relative_to(STRICT[0]) or request.path.is_relative_to(STRICT[1])
    threads = set(threading.enumerate())
    children = child_processes()
    # SQLite's heap limits are the process's: every Host sets them (from its config's
    # sql_memory_bytes) and none unsets them, so a small one would fail the SQL of every
    # later test. Put back as they were, whatever the test made.
    heap_limits = apsw.hard_heap_limit(-1), apsw.soft_heap_limit(-1)  # (-1: only asks)
    environ = _environ()
    yield
    drain_background_work()
    apsw.hard_heap_limit(heap_limits[0])
    apsw.soft_heap_limit(heap_limits[1])
    if not strict:
        return

    def left() -> list[str]:
        return ([t.name for t in set(threading.enumerate()) - threads
                 if t.is_alive() and not t.name.startswith(PROCESS_THREADS)]
                + [f"process {pid}" for pid in child_processes() - children])

    deadline = time.monotonic() + ENDING_S
    while (running := left()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not running, f"the test left running: {sorted(running)}"
    assert _environ() == environ, "the test changed the environment (monkeypatch.setenv)"


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # pytest's


def drain_background_work() -> None:
    """Return once everything queued so far on the process-wide threads has run."""
    wait_new_files()  # one FIFO thread runs the new files' syncs; a failed one counts as run
    _drain_resolver()


def _drain_resolver() -> None:
    """Wait for the name lookups on wkhost.fetch.transport's pool (a test's slow fake
    getaddrinfo outlives the fetch it timed out). All of the pool's workers meeting at one
    barrier means that none is still on an earlier lookup."""
    http_fetch = sys.modules.get("wkhost.fetch.transport")
    if http_fetch is None or not http_fetch._RESOLVER._threads:
        return  # never used: nothing is queued
    pool = http_fetch._RESOLVER
    barrier = threading.Barrier(pool._max_workers + 1, timeout=ENDING_S)
    for _ in range(pool._max_workers):
        pool.submit(barrier.wait)
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pytest.fail(f"a name lookup on the host's resolver ran past {ENDING_S} s")


def child_processes() -> set[int]:
    """This process's live children (any thread's). Zombies are left out: a child that
    has exited holds nothing, and Python reaps it later."""
    pids: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except FileNotFoundError:  # no /proc: not checked
        return pids
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except (FileNotFoundError, ProcessLookupError):  # the thread has just ended
            continue
    return {pid for pid in pids if _state(pid) not in ("Z", None)}


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
