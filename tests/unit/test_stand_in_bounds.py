"""The SQL stand-ins' work over guest values (host/storage/functions.py, issue 36 item 1):
linear in the values, whatever characters they hold, and given up once the statement is
interrupted (its event's deadline, storage/watch.py), not only once it returns."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from wkhost.storage import functions as sql_functions
from wkhost.storage.actordb import ActorDb, SqlError

# 240,000 distinct characters above U+FFFF: a regex class of them is scanned one by one
# for each character of the value (len(X) * len(Y)).
ASTRAL = "".join(chr(0x10000 + i) for i in range(240_000))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ActorDb]:
    d = ActorDb(tmp_path / "a.db", max_pages=2048)
    yield d
    d.close()


def test_trim_of_astral_characters_repeated_completes_right_within_its_budget(
        db: ActorDb) -> None:
    """Ten trims of 240,000 astral characters by the same 240,000. The issue's case, 80,000
    of them, was a 14 s statement through a guest against a 10 s budget; a regex class costs
    the value's length times the class's, so at three times both the old stand-in runs
    several times past the budget, while the walk, linear, answers well within it, with
    room for a busy machine."""
    value = "ab" + ASTRAL + "cd" + ASTRAL
    sql = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10) "
           "SELECT trim(?1, ?2), ltrim(?1, ?2), rtrim(?1, ?2), count(*) FROM c")
    _, rows = db.guest_exec(sql, [value, ASTRAL], False, deadline=time.monotonic() + 10)
    kept = "ab" + ASTRAL + "cd"  # written out: Python's own strip scans the set per character
    assert rows == [(kept, value, kept, 10)]


def test_a_trim_gives_up_inside_its_call_once_its_statement_is_interrupted(
        db: ActorDb) -> None:
    """The watch interrupts a statement at its deadline, and SQLite would see it only once
    the function returned: the stand-in looks itself, and makes no result."""
    conn = db.conn
    made: list[int] = []
    conn.create_scalar_function("cut", lambda: conn.interrupt() or 1, 0)
    conn.create_scalar_function("made", lambda v: made.append(len(v)) or 1, 1)
    with pytest.raises(SqlError, match="wall-clock budget"):
        db.guest_exec("SELECT cut(), made(trim(?1, ?2))", [ASTRAL * 4, ASTRAL], False)
    assert made == []
    assert db.guest_exec("SELECT trim('xxaxx', 'x')", [], False)[1] == [("a",)]


@pytest.mark.parametrize("size", [1, 3, 16, 17, 40])
def test_trim_with_sets_of_every_size_answers_as_sqlite_does(size: int) -> None:
    """Few characters (`str.strip`) or many (a set), chunk borders included: the bytes
    SQLite's own trim gives."""
    builtin = apsw.Connection(":memory:")
    mine = apsw.Connection(":memory:")
    sql_functions.install(mine, 1 << 30)
    rng = random.Random(size)
    alphabet = [chr(c) for c in (*range(0x61, 0x7B), 0xE9, 0x6F22, 0x1F600, 0x10FFFF)]
    chunk = sql_functions.CHUNK
    for _ in range(12):
        chars = "".join(rng.choice(alphabet) for _ in range(size))
        pad = "".join(rng.choice(chars) for _ in range(rng.choice([0, 3, chunk, chunk + 1])))
        middle = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        value = pad + middle + pad[::-1]
        for fn in ("trim", "ltrim", "rtrim"):
            sql = f"SELECT hex({fn}(?, ?))"
            assert mine.execute(sql, (value, chars)).fetchall() == \
                builtin.execute(sql, (value, chars)).fetchall(), (fn, chars, len(value))
