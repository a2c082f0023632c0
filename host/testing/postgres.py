"""A private PostgreSQL for tests and demos: its own directory, its own port on
127.0.0.1 (never 5432), stopped and removed with `close()`.

    with PgServer.start() as pg:
        url = pg.create_database("t1")     # postgresql://wkpg@127.0.0.1:PORT/t1
        pg.kill(); pg.restart()            # a crash, then crash recovery

PostgreSQL refuses to run as root, so as root the server runs as the unprivileged
system user `wkpg` (tests/cluster/setup_postgres.sh makes it, and installs Debian's
postgresql when it is missing); otherwise it runs as whoever calls. Its superuser is
named `wkpg` either way, and it trusts every connection from 127.0.0.1: a test server.
`fsync` stays on, since the tests are about durability.

No PostgreSQL driver here (testing/ sits below cluster/, the only place of psycopg):
readiness is pg_ctl's own wait, and databases are made with psql.

`python -m wkhost.testing.postgres` starts one and prints its URL until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from .pg_machine import (
    USER,
    alive,
    as_owner,
    bindir,
    children,
    free_port,
    reachable,
    wait_gone,
)

__all__ = ["PgServer", "main"]

_STARTS = 5  # ports tried before giving up: another process may take the one we picked
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

SETTINGS = """\
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{sock}'
fsync = on
synchronous_commit = on
max_connections = 200
shared_buffers = 32MB
"""


class PgServer:
    """A running private server; made by `PgServer.start()`."""

    def __init__(self, root: Path, remove_root: bool, bindir: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.sock = root / "sock"
        self.log = root / "server.log"
        self.port = 0
        self._remove_root = remove_root
        self._bin = bindir
        self._owner = as_owner()
        self._pid: int | None = None

    # -- life ------------------------------------------------------------------------

    @classmethod
    def start(cls, base_dir: Path | None = None) -> PgServer:
        """initdb in `base_dir` (made if missing; a new temporary directory if None),
        then start on a free port. Raises PgMissing if PostgreSQL is not installed."""
        server = cls._made(base_dir)
        try:
            server._initdb()
            server._start_on_free_port()
        except BaseException:
            server.close()
            raise
        return server

    @classmethod
    def _made(cls, base_dir: Path | None) -> PgServer:
        where = bindir()
        owner = as_owner()
        if base_dir is not None:
            fresh = not base_dir.exists()
            base_dir.mkdir(parents=True, exist_ok=True)
            if not owner or reachable(base_dir, owner):
                return cls(base_dir, fresh, where)
            if fresh:
                base_dir.rmdir()
        # As root, `wkpg` cannot enter a directory under a private one (pytest's
        # tmp_path is under a 0700 directory): the system's temporary directory it can.
        return cls(Path(tempfile.mkdtemp(prefix="wkpg-")), True, where)

    def _initdb(self) -> None:
        self.sock.mkdir(exist_ok=True)
        if self._owner:
            uid, gid = pwd.getpwnam(USER)[2:4]
            for p in (self.root, self.sock):
                os.chown(p, uid, gid)
        self._run(self._owner + [str(self._bin / "initdb"), "-D", str(self.data),
                                 "-U", USER, "--auth=trust", "-E", "UTF8", "--locale=C",
                                 "--no-sync"], "initdb")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("\ninclude 'wk.conf'\n")

    def _start_on_free_port(self) -> None:
        for _ in range(_STARTS):
            self.port = free_port()
            (self.data / "wk.conf").write_text(SETTINGS.format(port=self.port, sock=self.sock))
            if self._owner:
                uid, gid = pwd.getpwnam(USER)[2:4]
                os.chown(self.data / "wk.conf", uid, gid)
            if self._pg_ctl_start():
                return
            if "already in use" not in self._log_tail():
                break
        raise RuntimeError(f"PostgreSQL did not start in {self.root}:\n{self._log_tail()}")

    def _pg_ctl_start(self) -> bool:
        cmd = self._owner + [str(self._bin / "pg_ctl"), "-D", str(self.data),
                             "-l", str(self.log), "-w", "-t", "60", "start"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            return False
        self._pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        return True

    def stop(self) -> None:
        """A clean shutdown (fast mode: sessions are ended). Nothing if not running."""
        if self._pid is None:
            return
        if alive(self._pid):
            self._run(self._owner + [str(self._bin / "pg_ctl"), "-D", str(self.data),
                                     "-m", "fast", "-w", "-t", "60", "stop"], "pg_ctl stop")
        self._pid = None

    def kill(self) -> None:
        """SIGKILL the postmaster and then its processes, as a crash would; returns when
        all are dead (a new postmaster refuses to start beside an old backend)."""
        pid = self._pid
        if pid is None:
            return
        kids = children(pid)
        for p in [pid, *kids]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        wait_gone([pid, *kids])
        # Dead but maybe not yet reaped by init, the postmaster would still look alive
        # to a new one, which would refuse to start: its lock files go with it.
        for lock in [self.data / "postmaster.pid", *self.sock.glob(".s.PGSQL.*.lock")]:
            lock.unlink(missing_ok=True)
        self._pid = None

    def restart(self) -> None:
        """Stop (if running), then start again on the same port and data: after `kill`,
        this is PostgreSQL's crash recovery."""
        self.stop()
        if not self._pg_ctl_start():
            raise RuntimeError(f"PostgreSQL did not restart on port {self.port}:\n"
                               f"{self._log_tail()}")

    def close(self) -> None:
        """Stop (killed if a clean stop fails) and remove the server's files."""
        try:
            self.stop()
        except (RuntimeError, OSError):
            self.kill()
        if self._remove_root:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            for p in (self.data, self.sock, self.log):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)

    def __enter__(self) -> PgServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- use -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The postmaster's pid; None while stopped or killed."""
        return self._pid

    @property
    def url(self) -> str:
        return self.url_of("postgres")

    def url_of(self, database: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database (a plain lower-case name); its URL."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"database name {name!r}: use [a-z_][a-z0-9_]*, at most 63")
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url_of(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run `sql` with psql over TCP; its output (unaligned, tuples only)."""
        done = subprocess.run([str(self._bin / "psql"), "-X", "-q", "-At",
                               "-v", "ON_ERROR_STOP=1", "-d", self.url_of(database),
                               "-c", sql], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {done.stderr.strip()}")
        return done.stdout

    # -- helpers ---------------------------------------------------------------------

    def _run(self, cmd: list[str], what: str) -> None:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{what} failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()}\n{self._log_tail()}")

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def main() -> None:
    """Until Ctrl-C or SIGTERM; then the server stops and its files go."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with PgServer.start() as pg:
        print(pg.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
