"""The test PostgreSQL itself (host/testing/postgres.py): it serves on its own port,
keeps a committed row through a SIGKILL of the postmaster, and cleans up after itself."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest
from wkhost.testing.postgres import PgServer


def test_a_server_of_its_own_serves_keeps_commits_through_kill_and_goes() -> None:
    with PgServer.start() as pg:
        assert pg.port != 5432
        assert pg.url == f"postgresql://wkpg@127.0.0.1:{pg.port}/postgres"
        url = pg.create_database("kept")
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SHOW fsync").fetchone() == ("on",)
            conn.execute("CREATE TABLE t (v int)")
            conn.execute("INSERT INTO t VALUES (1), (2)")
        old = pg.pid
        assert old is not None
        pg.kill()
        assert pg.pid is None
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=5).close()
        pg.restart()
        assert pg.pid not in (None, old)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT v FROM t ORDER BY v").fetchall() == [(1,), (2,)]
        pg.restart()  # a clean stop and start, too
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)
        root = pg.root
    assert not root.exists()


def test_a_base_dir_is_used_when_reachable_and_emptied_on_close() -> None:
    base = Path("/tmp") / f"wk-pg-test-{os.getpid()}"  # reachable by `wkpg` as root
    with PgServer.start(base) as pg:
        assert pg.root == base
        assert (base / "data" / "PG_VERSION").is_file()
    assert not base.exists()


def test_the_session_server_gives_each_test_its_own_database(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)
        conn.execute("CREATE TABLE mine (v int)")  # the next test's database has none


def test_a_database_name_is_checked(pg_server: PgServer) -> None:
    with pytest.raises(ValueError):
        pg_server.create_database('x"; DROP DATABASE postgres; --')
