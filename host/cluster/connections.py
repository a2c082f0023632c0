"""The cluster store's connections to PostgreSQL: one per thread (autocommit), shared by
the node's threads through one `Connections`.

A broken connection raises StoreUnavailable and is replaced on the next call; reads, and
writes that mean the same when repeated (renewals, heartbeats), are tried once more on a
new connection first (`run(..., retry=True)`), since a connection that PostgreSQL closed
while it idled (a restart) says so only when used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

T = TypeVar("T")
Conn = psycopg.Connection[Any]

# A dead server is found in seconds, not at the kernel's TCP timeout of minutes.
_CONNECT: dict[str, Any] = {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 10,
                            "keepalives_interval": 5, "keepalives_count": 3}


class StoreUnavailable(Exception):
    """PostgreSQL cannot be reached, or the connection broke during the call (whether a
    write in it committed is then unknown)."""


class Connections:
    """Each thread's connection to the store at `url`, made when first used."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._local = threading.local()
        self._open: dict[threading.Thread, Conn] = {}  # each thread's, to close them
        self._lock = threading.Lock()
        info = conninfo_to_dict(url)
        self._where = (f"PostgreSQL at {info.get('host', 'localhost')}:"
                       f"{info.get('port', 5432)}/{info.get('dbname', '')}")

    def close(self) -> None:
        """Close every thread's connection (a later call opens a new one)."""
        with self._lock:
            conns, self._open = list(self._open.values()), {}
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def _conn(self) -> Conn:
        conn: Conn | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed:
            return conn
        try:
            conn = psycopg.connect(self._url, autocommit=True, **_CONNECT)
        except psycopg.OperationalError as e:
            raise StoreUnavailable(f"{self._where}: {_first_line(e)}") from None
        self._local.conn = conn
        with self._lock:
            ended = [t for t in self._open if not t.is_alive()]
            gone = [self._open.pop(t) for t in ended]  # threads that ended left theirs
            self._open[threading.current_thread()] = conn
        for old in gone:
            old.close()
        return conn

    def _drop(self, conn: Conn) -> None:
        with self._lock:
            if self._open.get(threading.current_thread()) is conn:
                del self._open[threading.current_thread()]
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        conn.close()

    def run(self, work: Callable[[Conn], T], retry: bool = False) -> T:
        """`work` on this thread's connection; a failure of the connection is
        StoreUnavailable. With `retry`, once more on a new connection if the failed one
        was an old one (it may have been closed by the server while it idled)."""
        reused = getattr(self._local, "conn", None) is not None
        conn = self._conn()
        try:
            return work(conn)
        except psycopg.OperationalError as e:
            if conn.broken or conn.closed:
                self._drop(conn)
                if retry and reused:
                    return self.run(work)
            raise StoreUnavailable(f"{self._where}: {_first_line(e)}") from e

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
             ) -> list[tuple[Any, ...]]:
        """A read (the listing's: cluster/listing.py), tried again on a new connection."""
        return self.run(lambda conn: conn.execute(sql, params).fetchall(), retry=True)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
