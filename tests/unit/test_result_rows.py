"""The one runner of every read of an actor's database (storage/statements.py) and what
its rows become (interfaces/sqlite.py's Typed and Packed): counted against a cap as they
come, packed piece by piece, and every failure of the host's work on them an apsw.Error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from wkhost.interfaces.sqlite import PIECE, Packed, Typed, pack_rows
from wkhost.storage import statements
from wkhost.storage.actordb import ActorDb, SqlError
from wkhost.storage.statements import Dropped, ResultError, Rows, run


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ActorDb]:
    d = ActorDb(tmp_path / "a.db", max_pages=100_000)
    d.max_result_bytes = 4 << 20
    yield d
    d.close()


@pytest.fixture
def conn() -> Iterator[apsw.Connection]:
    """A plain connection: the runner needs no more (an actor's denies the host a CTE)."""
    c = apsw.Connection(":memory:")
    yield c
    c.close()


def many(n: int, value: str) -> str:
    return (f"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n}) "
            f"SELECT i, {value} FROM c")


def test_a_result_past_its_cap_is_refused_as_it_comes(db: ActorDb,
                                                      conn: apsw.Connection) -> None:
    into = Rows(cap=1 << 20)
    with pytest.raises(ResultError, match="result too large.*--memory-mb"):
        run(conn, many(1000, "zeroblob(10000)"), (), True, into)
    assert into.count < 150  # stopped at the cap, not after gathering all of them
    with pytest.raises(SqlError, match="result too large"):
        db.guest_exec(many(100, "zeroblob(100000)"), [], False)  # 10 MB past the 4 MiB
    assert db.guest_exec("SELECT 1", [], False)[1] == [(1,)]


def test_a_writes_rows_are_counted_never_kept(conn: apsw.Connection) -> None:
    into = Dropped(cap=1)
    assert run(conn, many(300, "zeroblob(100000)"), (), True, into) == ["i", "zeroblob(100000)"]
    assert into.count == 300 and into.rows == [] and into.size == 0


@pytest.mark.parametrize("sql", ["SELECT CAST(x'ff' AS TEXT)", "SELECT char(55296)",
                                 "SELECT 'ok' UNION ALL SELECT CAST(x'41ff' AS TEXT)"])
def test_text_that_is_not_utf8_is_the_statements_error_naming_its_row(
        db: ActorDb, conn: apsw.Connection, sql: str) -> None:
    rows = 2 if "UNION" in sql else 1
    for into in (Rows(), Typed(), Packed(), Dropped()):
        with pytest.raises(ResultError, match=f"not valid UTF-8: row {rows} "):
            run(conn, sql, (), True, into)
    with pytest.raises(SqlError, match="not valid UTF-8"):
        db.guest_exec(sql, [], False)
    with pytest.raises(apsw.Error, match="not valid UTF-8"):
        db.host_exec(sql)


@pytest.mark.parametrize("error", [RuntimeError("boom"), MemoryError(), KeyError("k")])
def test_any_failure_of_the_conversion_is_an_apsw_error(
        db: ActorDb, conn: apsw.Connection, error: Exception,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*_: object) -> None:
        raise error

    monkeypatch.setattr(Typed, "add", failing)
    with pytest.raises(ResultError, match=f"host failed on the statement.*{type(error).__name__}"):
        run(conn, "SELECT 1", (), True, Typed())
    monkeypatch.setattr(statements, "_run", failing)
    with pytest.raises(SqlError, match=type(error).__name__):
        db.guest_exec("SELECT 1", [], False)
    with pytest.raises(apsw.Error):
        db.host_exec("SELECT 1")


def test_typed_rows_are_wit_values(conn: apsw.Connection) -> None:
    into = Typed()
    run(conn, "SELECT NULL, 1, 2.5, 't', x'00ff'", (), True, into)
    assert [(v.tag, v.payload) for v in into.rows[0]] == [
        ("null", None), ("integer", 1), ("real", 2.5), ("text", "t"), ("blob", "\x00\xff")]


def test_packing_piece_by_piece_is_the_same_json(conn: apsw.Connection) -> None:
    big_text = "aé\u20ac\U0001F600\"\\\n" * (PIECE // 3)
    big_blob = bytes(range(256)) * (PIECE // 100)
    rows = [(1, None, 2.5, "small", b"\x00\x01"), (big_text, big_blob, 3, "x", b"")]
    expected = json.dumps([["a", "b", "c", "d", "e"], *rows], separators=(",", ":"),
                          default=lambda b: {"b64": __import__("base64").b64encode(b)
                                             .decode()})
    assert pack_rows(["a", "b", "c", "d", "e"], rows) == expected
    packed = Packed(cap=100 << 20)
    run(conn, "SELECT ?, ?", (big_text, big_blob), True, packed)
    assert json.loads(packed.text(["x", "y"]))[1][0] == big_text


def test_packing_a_big_row_stops_at_the_cap_and_the_deadline(
        db: ActorDb, conn: apsw.Connection) -> None:
    blob = b"\x01" * (4 * PIECE)
    with pytest.raises(ResultError, match="result too large"):
        run(conn, "SELECT ?", (blob,), True, Packed(cap=2 * PIECE))
    with pytest.raises(ResultError, match="^interrupted:"):
        run(conn, "SELECT ?", (blob,), True, Packed(deadline=time.monotonic() - 1))
    with pytest.raises(SqlError, match="^interrupted:"):
        db.guest_exec("SELECT ?", [blob], False, into=Packed(deadline=time.monotonic() - 1))
