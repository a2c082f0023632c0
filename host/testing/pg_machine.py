"""What a private PostgreSQL (testing/postgres.py) needs of this machine: where its
server programs are, the user they run as (PostgreSQL refuses to run as root), a free
port, and its processes as Linux's /proc shows them (a crash is a SIGKILL of each).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

USER = "wkpg"
SETUP = "bash tests/cluster/setup_postgres.sh"


class PgMissing(RuntimeError):
    """PostgreSQL, or the user it runs as, is not installed here."""


def bindir() -> Path:
    """Where initdb, pg_ctl and psql are: `pg_config --bindir`, else the newest
    /usr/lib/postgresql/*/bin (Debian's layout)."""
    found: list[Path] = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if out.returncode == 0:
            found.append(Path(out.stdout.strip()))

    def version(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.parent.name)) or (0,)

    found += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for d in found:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    raise PgMissing(f"PostgreSQL's server programs (initdb, pg_ctl) are not installed: "
                    f"run `{SETUP}` (as root), or apt-get install postgresql")


def as_owner() -> list[str]:
    """The prefix that runs a server program as the user that owns the data: as root,
    `wkpg` through runuser; otherwise oneself."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(USER)
    except KeyError:
        raise PgMissing(f"running as root, PostgreSQL needs the unprivileged user "
                        f"{USER!r}: run `{SETUP}`") from None
    return ["runuser", "-u", USER, "--"]


def free_port() -> int:
    """A port that was free a moment ago (bound to 0 and released); never 5432."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port != 5432:
            return port


def reachable(path: Path, owner: list[str]) -> bool:
    done = subprocess.run(owner + ["test", "-x", str(path)], capture_output=True)
    return done.returncode == 0


def alive(pid: int) -> bool:
    """Running (a zombie, killed and not yet reaped by init, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def wait_gone(pids: list[int], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL's processes {pids} outlived SIGKILL")
        time.sleep(0.02)
