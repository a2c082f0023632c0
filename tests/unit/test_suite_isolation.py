"""The suite's guard (tests/conftest.py): a test never sees the background work of the
tests before it (issue 22, item 1).

Two tests run in a pytest of their own: the first leaves new files' syncs queued on the
process-wide syncing thread, held up behind a sync that waits on a FIFO; the second
records every fsync of the process and finds only its own files'. With the guard, the
first test's end waits for its syncs; without it, they run inside the second test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# `{release_s}`: how long the held sync waits for someone to record fsyncs before it is
# let go anyway. With the guard, the first test's end waits that long, and nobody can be
# recording yet; without it, the second test records long before.
TESTS = '''
import os
import threading
from pathlib import Path

from wkhost.storage.actordb import ActorDb
from wkhost.storage.files import start_new_file_sync

REAL_FSYNC = os.fsync


def test_leaves_syncs_queued(tmp_path: Path) -> None:
    fifo = tmp_path / "held"
    os.mkfifo(fifo)
    start_new_file_sync(fifo)  # the syncing thread waits in open() until a writer comes
    for i in range(3):
        ActorDb(tmp_path / f"{{i}}.db", max_pages=64).close()  # queued behind it

    def writer() -> None:  # comes once fsyncs are recorded (or after release_s)
        for _ in range(int({release_s} * 100)):
            if os.fsync is not REAL_FSYNC:
                break
            threading.Event().wait(0.01)
        os.close(os.open(fifo, os.O_WRONLY))

    threading.Thread(target=writer, daemon=True).start()


def test_records_only_its_own_syncs(tmp_path: Path, monkeypatch) -> None:
    seen = []

    def fsync(fd: int) -> None:
        REAL_FSYNC(fd)
        seen.append(os.readlink(f"/proc/self/fd/{{fd}}"))

    monkeypatch.setattr(os, "fsync", fsync)
    d = ActorDb(tmp_path / "a.db", max_pages=64)
    try:
        d.guest_exec("CREATE TABLE t (x)", [], False)
        d.guest_exec("INSERT INTO t VALUES (1)", [], True)  # waits for its file's syncs
    finally:
        d.close()
    others = sorted({{Path(p).name for p in seen if not Path(p).is_relative_to(tmp_path)}})
    assert seen and not others, f"syncs of other tests' files: {{others}}"
'''


def run_pair(tmp_path: Path, guarded: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_pair.py").write_text(TESTS.format(release_s=0.2 if guarded else 60))
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import background_work_stays_in_its_test  # noqa: F401\n"
        if guarded else "")
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}  # for `tests.conftest`
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "tmp"),
         str(tmp_path / "test_pair.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_with_the_guard_a_test_sees_no_sync_queued_by_the_one_before(tmp_path: Path) -> None:
    out = run_pair(tmp_path, guarded=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout


def test_without_the_guard_it_would(tmp_path: Path) -> None:
    """The pair above can fail: without the guard, the first test's syncs are recorded
    by the second."""
    out = run_pair(tmp_path, guarded=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "1 failed, 1 passed" in out.stdout
    assert "FAILED test_pair.py::test_records_only_its_own_syncs" in out.stdout
    assert "syncs of other tests' files: ['test_leaves_syncs_queued0']" in out.stdout
