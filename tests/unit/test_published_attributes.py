"""What an actor publishes (storage/attributes.py): kept in its database with its next
write, copied into the index, listed by status, time and label, and rebuilt from the
databases (storage/index.py, storage/listing.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from wkhost.storage.actordb import ActorDb, SqlError
from wkhost.storage.attributes import Attributes, checked, decoded
from wkhost.storage.files import wait_new_files
from wkhost.storage.index import Index
from wkhost.storage.listing import ListQuery, merged
from wkhost.storage.paths import db_path
from wkhost.types import ActorRef


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ActorDb]:
    d = ActorDb(tmp_path / "a.db", max_pages=256)
    d.guest_exec("CREATE TABLE t (x INTEGER UNIQUE)", [], False)
    yield d
    d.close()


def committed(db: ActorDb) -> Attributes | None:
    rows = db.host_exec("SELECT v FROM main._wk_host_meta WHERE k = 'attrs'")
    return decoded(rows[0][0]) if rows else None


def publish(db: ActorDb, status: str, ms: int = 1) -> None:
    db.publish(checked(status, ms, [], None).encoded())


def test_published_outside_a_transaction_commits_with_the_next_statement(db: ActorDb) -> None:
    publish(db, "waiting")
    assert committed(db) is None and not db.conn.in_transaction
    db.guest_exec("INSERT INTO t VALUES (1)", [], True)
    assert committed(db) == Attributes("waiting", 1, first_ms=1)
    assert db.pending_attrs is None and not db.conn.in_transaction


def test_a_statement_that_fails_takes_the_attributes_back_until_the_next(db: ActorDb) -> None:
    db.guest_exec("INSERT INTO t VALUES (1)", [], False)
    publish(db, "done")
    with pytest.raises(SqlError):
        db.guest_exec("INSERT INTO t VALUES (1)", [], False)  # the UNIQUE constraint
    assert committed(db) is None and db.pending_attrs is not None
    db.guest_exec("INSERT INTO t VALUES (2)", [], False)
    assert committed(db) == Attributes("done", 1, first_ms=1)


def test_inside_a_transaction_they_roll_back_with_it(db: ActorDb) -> None:
    db.guest_exec("BEGIN", [], False)
    publish(db, "gone")
    db.guest_exec("INSERT INTO t VALUES (3)", [], False)
    db.guest_exec("ROLLBACK", [], False)
    assert committed(db) is None and db.pending_attrs is None
    db.guest_exec("BEGIN", [], False)
    publish(db, "kept")
    db.guest_exec("COMMIT", [], False)
    assert committed(db) == Attributes("kept", 1, first_ms=1)


def test_a_script_with_its_own_transaction_takes_them_in(db: ActorDb) -> None:
    publish(db, "begun")
    db.guest_exec("BEGIN", [], False)  # fails inside the host's, so runs on its own
    assert db.conn.in_transaction and db.pending_attrs is None
    db.guest_exec("INSERT INTO t VALUES (4); COMMIT", [], False)
    assert committed(db) == Attributes("begun", 1, first_ms=1)
    assert db.host_exec("SELECT x FROM t") == [(4,)]


def test_at_the_event_end_they_commit_alone_unless_it_trapped(db: ActorDb) -> None:
    publish(db, "trapped")
    db.settle_attrs(commit=False)
    assert committed(db) is None and db.pending_attrs is None
    publish(db, "clean", 5)
    db.settle_attrs(commit=True)
    assert committed(db) == Attributes("clean", 5, first_ms=5)


def test_the_first_publish_is_kept_as_the_actors_start() -> None:
    first = checked("running", 100, [], None)
    assert first.first_ms == 100
    later = checked("waiting", 250, None, first)
    assert (later.updated_ms, later.first_ms) == (250, 100)
    assert decoded(later.encoded()) == later
    older = decoded('{"status":"waiting","updated_ms":7,"labels":{}}')  # kept before
    assert older == Attributes("waiting", 7) and checked("done", 9, None, older).first_ms \
        is None  # not known, so not made up


def test_guest_sql_cannot_read_them(db: ActorDb) -> None:
    publish(db, "secret")
    db.settle_attrs(commit=True)
    with pytest.raises(SqlError):
        db.guest_exec("SELECT v FROM _wk_host_meta", [], False)


def test_bounds_are_checked_and_labels_kept_when_none_are_given() -> None:
    before = checked("a", 1, [("k", "v")], None)
    assert checked("b", 2, None, before).labels == (("k", "v"),)
    assert checked("b", 2, [], before).labels == ()
    for status, labels, says in [("", [], "status"), ("x" * 65, [], "status"),
                                 ("s", [(f"k{i}", "") for i in range(17)], "16 labels"),
                                 ("s", [("", "v")], "key"), ("s", [("k", "v" * 257)], "value")]:
        with pytest.raises(ValueError, match=says):
            checked(status, 1, labels, None)


def _index_of(tmp_path: Path, n: int) -> Index:
    index = Index(tmp_path / "_host")
    for i in range(n):
        ref = ActorRef("wf", f"i{i:03d}")
        index.add_actor(ref)
        status = ("waiting", "failed", "completed")[i % 3]
        index.set_attrs(ref, Attributes(status, 1000 + i, (("region", "eu" if i % 2 else "us"),)))
    index.add_actor(ActorRef("wf", "silent"))  # published nothing
    return index


def test_listing_filters_orders_pages_and_counts(tmp_path: Path) -> None:
    index = _index_of(tmp_path, 30)
    try:
        rows, count = index.list_page(ListQuery("wf", ("failed",), limit=4), count=True)
        assert [r.id for r in rows] == ["i001", "i004", "i007", "i010"] and count == 10
        assert {r.status for r in rows} == {"failed"} and rows[0].labels == {"region": "eu"}
        # a cursor: the page after, none listed twice
        page = merged(ListQuery("wf", ("failed",), limit=4), [(rows, count)])
        rows2, _ = index.list_page(ListQuery("wf", ("failed",), after=str(page.next), limit=4))
        assert [r.id for r in rows2] == ["i013", "i016", "i019", "i022"]
        # time range, label, newest first, then the page after by its cursor
        q = ListQuery("wf", since=1010, until=1020, labels=(("region", "eu"),),
                      order="-updated", limit=3)
        rows, count = index.list_page(q, count=True)
        assert [r.id for r in rows] == ["i019", "i017", "i015"] and count == 5
        after = merged(q, [(rows, count)]).next
        assert after == "1015/i015"
        rows, _ = index.list_page(ListQuery("wf", since=1010, until=1020,
                                            labels=(("region", "eu"),), order="-updated",
                                            after=after, limit=3))
        assert [r.id for r in rows] == ["i013", "i011"]
        # no filter: every actor, those that published nothing too
        rows, count = index.list_page(ListQuery("wf", limit=100), count=True)
        assert count == 31 and rows[-1].id == "silent" and rows[-1].status is None
    finally:
        index.close()


def test_pages_of_several_processes_merge_in_order_and_counts_add(tmp_path: Path) -> None:
    a, b = _index_of(tmp_path / "a", 6), _index_of(tmp_path / "b", 0)
    try:
        b.set_attrs(ActorRef("wf", "h"), Attributes("failed", 1002))
        q = ListQuery("wf", ("failed",), order="updated", limit=2)
        page = merged(q, [a.list_page(q, True), b.list_page(q, True)])
        assert [r.id for r in page.rows] == ["i001", "h"] and page.count == 3
        assert page.next == "1002/h"
    finally:
        a.close()
        b.close()


def test_a_removed_actor_is_forgotten_and_a_rebuild_reads_them_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for actor_id, status in (("a", "waiting"), ("b", "failed")):
        d = ActorDb(db_path(data, "wf", actor_id), max_pages=64)
        d.host_exec("INSERT INTO _wk_host_meta VALUES ('class', 'wf'), ('id', ?), "
                    "('initialized', 1)", (actor_id,))
        d.publish(checked(status, 7, [("team", "x")], None).encoded())
        d.settle_attrs(commit=True)
        d.close()
    wait_new_files()
    index = Index(tmp_path / "_host")
    try:
        assert index.rebuild(data) == 2
        rows, _ = index.list_page(ListQuery("wf", ("failed",), labels=(("team", "x"),)))
        assert [(r.id, r.updated_ms) for r in rows] == [("b", 7)]
        index.remove_actor(ActorRef("wf", "b"))
        assert index.list_page(ListQuery("wf", ("failed",)))[0] == []
    finally:
        index.close()


def test_a_bad_query_says_which_part_is_wrong() -> None:
    with pytest.raises(ValueError, match="order"):
        ListQuery("wf", order="sideways")
    with pytest.raises(ValueError, match="limit"):
        ListQuery("wf", limit=0)
    with pytest.raises(ValueError, match="after"):
        ListQuery("wf", order="updated", after="i001")
