"""A real PostgreSQL for the cluster tests (host/testing/postgres.py): one private
server for the run, and a fresh database for each test.

    def test_x(pg_url: str) -> None:        # postgresql://wkpg@127.0.0.1:PORT/t_3
        ...
    def test_y(pg_server: PgServer) -> None: # the server itself: kill(), restart()

And the shop's classes served by three nodes over that database (`cluster`), for the tests
that drive orders through a cluster.

Never skipped: without PostgreSQL the tests fail, saying what to run
(`bash tests/cluster/setup_postgres.sh`, which `make test` runs).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from wkhost.testing.pg_machine import PgMissing
from wkhost.testing.postgres import PgServer

from tests.e2e.reliability_support import SHOP_ACCESS, SHOP_SOURCES

from .nodes import Cluster

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        server = PgServer.start()
    except PgMissing as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A new, empty database of the session's server. A test that killed the server
    leaves it down; the next test's database starts it again."""
    if pg_server.pid is None:
        pg_server.restart()
    return pg_server.create_database(f"t_{next(_numbers)}")


@pytest.fixture(scope="module")
def wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    """The shop's classes, built once a module."""
    return {name: build_guest(src) for name, src in SHOP_SOURCES.items()}


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str, wasm: dict[str, Path]) -> Iterator[Cluster]:
    """Three nodes serving the shop over this test's database, started and stopped."""
    c = Cluster(tmp_path, pg_url, wasm, access=SHOP_ACCESS)
    try:
        yield c.start()
    finally:
        c.close()
