"""Whether a guest statement was cut at its deadline is a value of its error
(`SqlError.interrupted`), which the sqlite interface reads to tell a narrowed deadline's
cut (interfaces/sqlite.py), never its text; and why no schema image was made is told
from SQLite's error class (storage/images.py's why_not_built)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from wkhost.storage.actordb import ActorDb, SqlError
from wkhost.storage.images import IMAGE_MAX_BYTES, why_not_built
from wkhost.storage.statements import INTERRUPTED, Interrupted, Rows, sql_error

RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ActorDb]:
    d = ActorDb(tmp_path / "a.db", max_pages=1000)
    try:
        yield d
    finally:
        d.close()


def test_a_statement_cut_at_its_deadline_says_so_as_a_value(db: ActorDb) -> None:
    with pytest.raises(SqlError) as cut:
        db.guest_exec(RUNAWAY, [], False, deadline=time.monotonic() + 0.1)
    assert cut.value.interrupted and str(cut.value) == INTERRUPTED
    with pytest.raises(SqlError) as failed:
        db.guest_exec("SELEC 1", [], False)
    assert not failed.value.interrupted


def test_the_hosts_work_past_the_deadline_between_rows_is_a_cut_too() -> None:
    rows = Rows(deadline=time.monotonic() - 1)
    with pytest.raises(Interrupted) as late:
        rows.in_time()
    e = sql_error(late.value, 1 << 20)
    assert e.interrupted and str(e) == INTERRUPTED


def test_other_failures_are_not_cuts_whatever_their_text() -> None:
    e = sql_error(apsw.SQLError("SQLError: interrupted: not really"), 1 << 20)
    assert not e.interrupted


def test_why_no_schema_image_is_told_by_the_errors_class() -> None:
    assert why_not_built(apsw.InterruptError("x")) == "making it ran past the event's deadline"
    assert why_not_built(apsw.FullError("x")) == f"it would be over {IMAGE_MAX_BYTES} bytes"
    assert why_not_built(apsw.SQLError("the disk is full, interrupted")) == \
        "the disk is full, interrupted"
