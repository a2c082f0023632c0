"""One server per data directory: each holds DATA/_host/serve.lock (`lock_data_dir`) for
its life, and a second one is refused at once, naming the first one's pid. The processes
of `--processes N` share their supervisor's lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import HostError

LOCK_FILE = "serve.lock"


def lock_data_dir(data_dir: Path, handed_fd: int | None = None) -> int:
    """Hold DATA/_host/serve.lock, for this process's life (the descriptor is never
    closed): two servers on one data directory would each write its actors' files as if
    alone. Raises HostError, naming the holder's pid, if another process holds it.

    `handed_fd`: the lock's descriptor as the supervisor of `--processes N` handed it to
    a process it started. An flock belongs to the open file, which the process shares
    with the supervisor, so the lock is the supervisor's, and this process's too. A
    process started by hand has no such descriptor, and is refused like any server."""
    path = data_dir / "_host" / LOCK_FILE
    if handed_fd is not None:
        return _check_handed(handed_fd, path, data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if not _flock(fd):
        holder = _holder(fd)
        os.close(fd)
        raise _in_use(data_dir, holder)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _check_handed(fd: int, path: Path, data_dir: Path) -> int:
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        same = False
    if not same:
        raise HostError(f"descriptor {fd} is not the lock of {data_dir} ({path})")
    if not _flock(fd):
        raise _in_use(data_dir, _holder(fd))
    return fd


def _flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    """The pid the lock's holder wrote in it ("unknown" if it has not yet)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def _in_use(data_dir: Path, holder: str) -> HostError:
    return HostError(f"{data_dir} is in use by another wkhost serve (pid {holder}): one "
                     "server per data directory; stop that one first, or give another "
                     "--data")
