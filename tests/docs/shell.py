"""One bash session that a document's commands run in, one after the other, as a user
types them: `cd`, `source`, variables and jobs (`kill %1`) carry from one to the next.

    with Shell(cwd, env) as sh:
        status, output = sh.run("wkhost build app.py -o app.wasm", timeout_s=120)
        log = sh.start_background("wkhost serve --actor app=app.wasm", logs)  # its file
    # leaving the block kills the session and everything it started

A command's stdout and stderr are a terminal (a pseudo-terminal), as a user's are: curl
shows no progress meter there, `wkhost call` shows an answer as it does on a terminal.
Its stdin is /dev/null (one that read stdin would otherwise read the commands after
it; bash reads them from a pipe, and so stays a non-interactive shell). A background
job's output goes to a file of its own, not into the output of whatever command runs
next, where its lines would land by timing alone.
"""

from __future__ import annotations

import contextlib
import os
import pty
import queue
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType


class ShellTimeout(Exception):
    """A command did not finish within its bound."""


class Shell:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self._cwd = cwd
        self._env = env
        self._done = f"__wk_transcript_done_{secrets.token_hex(6)}__"
        self._chunks: queue.Queue[bytes] = queue.Queue()
        self._jobs: list[int] = []  # each job's process group
        self._terminal = -1
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Shell:
        # A session of its own: on the way out, one killpg ends bash, its jobs and their
        # children (a server's worker processes) together.
        self._terminal, tty = pty.openpty()
        try:
            self._proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc"], cwd=self._cwd, env=self._env,
                stdin=subprocess.PIPE, stdout=tty, stderr=tty, start_new_session=True)
        finally:
            os.close(tty)
        threading.Thread(target=self._read, daemon=True).start()
        # Job control, as in a user's terminal: a job is a process group of its own, and
        # `kill %1` signals all of it (the server, not only the subshell that started it).
        self.run("set -m", 10)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._terminal, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                chunk = b""
            self._chunks.put(chunk.replace(b"\r\n", b"\n"))
            if not chunk:
                return

    def _send(self, script: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(script.encode())
        self._proc.stdin.flush()

    def run(self, command: str, timeout_s: float) -> tuple[int, str]:
        """Run `command` in the session: (its exit status, its output, stdout and stderr
        as a terminal shows them). Raises ShellTimeout."""
        # The group runs in this shell (so `source` and `cd` stay); the newline before
        # `}` ends a trailing `# comment`; the marker follows on a line of its own, after
        # output that did not end its last line.
        self._send(f"{{ {command}\n}} </dev/null\nprintf '\\n{self._done} %d\\n' $?\n")
        return self._collect(timeout_s)

    def _collect(self, timeout_s: float) -> tuple[int, str]:
        text, deadline = b"", time.monotonic() + timeout_s
        marker = f"\n{self._done} ".encode()
        while marker not in text or not text.split(marker, 1)[1].endswith(b"\n"):
            left = deadline - time.monotonic()
            try:
                chunk = self._chunks.get(timeout=max(left, 0.01))
            except queue.Empty:
                raise ShellTimeout(f"no end after {timeout_s:.0f} s; it printed:\n"
                                   f"{text.decode(errors='replace')}") from None
            if not chunk:
                raise ShellTimeout(f"the shell ended; it printed:\n{text.decode()}")
            text += chunk
        output, status = text.split(marker, 1)
        return int(status.split()[0]), output.decode(errors="replace")

    def start_background(self, command: str, log_dir: Path) -> Path:
        """Start `command` as the session's next job (%1, %2, ...); the file its output
        goes to."""
        log = log_dir / f"job-{len(self._jobs) + 1}.log"
        status, output = self.run(f"{{ {command}\n}} </dev/null >{log} 2>&1 &\necho $!", 10)
        pid = output.strip().splitlines()[-1] if output.strip() else ""
        # (what comes before the pid: bash's notice of a job that ended meanwhile)
        if status != 0 or not pid.isdigit():
            raise RuntimeError(f"starting {command!r}: {status} {output}")
        self._jobs.append(int(pid))
        return log

    def close(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        # SIGTERM first, as a user's kill would: a server closes its databases.
        groups = [*self._jobs, proc.pid]
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            for group in groups:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, sig)
            proc.poll()  # reap bash, or it stays a member of its group
            if all(_group_gone(group, wait_s) for group in groups):
                break
        proc.wait(timeout=5)
        os.close(self._terminal)


def _group_gone(pgid: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not _live_members(pgid):
            return True
        time.sleep(0.05)
    return False


def _live_members(pgid: int) -> list[int]:
    """The group's processes that are not zombies (those the container's first process
    may never reap, and that a signal no longer reaches)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live
