"""A real guest's failed SQL and actor calls carry the host's kind beside the host's text
(WIT `sqlite.last-error`, `actors.last-error`), as the SDK's `SqliteError.kind` and
`CallError.kind`: an SQL error, a write in a read-only event, a statement cut at the
deadline the guest set itself; a call to a class not served, to a class that does not
declare the request's protocol, back into the caller, into a callee that traps, and
one cut at the caller's narrowed deadline. The texts are the host's, as before. The
guest is tests/guests/error_kinds.py."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.interfaces.sqlite import NARROWED
from wkhost.storage.readonly import READ_ONLY
from wkhost.testing import FakeClock

from ..conftest import BuildGuest
from .support import COMPILED, START_MS, Probe

CLS = "kinds"
COUNT = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1e12) "
         "SELECT count(*) FROM c")


@pytest.fixture(scope="module")
def error_kinds_wasm(build_guest: BuildGuest) -> Path:
    return build_guest("error_kinds")


@pytest.fixture
def kinds(tmp_path: Path, error_kinds_wasm: Path) -> Iterator[Probe]:
    clock = FakeClock(START_MS)
    host = Host(HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED), clock)
    try:
        host.add_class(CLS, error_kinds_wasm)
        host.start()
        yield Probe(host, clock)
    finally:
        with contextlib.suppress(Exception):
            host.close(timeout_s=2)


def sql(p: Probe, **doc: Any) -> dict[str, Any]:
    got: dict[str, Any] = p.json("a", "POST", "/sql", doc, cls=CLS)
    return got


def call(p: Probe, **doc: Any) -> dict[str, Any]:
    got: dict[str, Any] = p.json("a", "POST", "/call", doc, cls=CLS)
    return got


def test_an_sql_error_is_kind_sql_with_sqlites_words(kinds: Probe) -> None:
    assert sql(kinds, sql="SELECT * FROM nowhere") == {
        "type": "SqliteError", "kind": "sql", "error": "SQLError: no such table: nowhere"}


def test_a_write_in_a_read_only_event_is_the_read_only_kind(kinds: Probe) -> None:
    sql(kinds, sql="CREATE TABLE t (x)")
    got = sql(kinds, sql="INSERT INTO t VALUES (1)", read_only=True)
    assert got["type"] == "ReadOnlyError", got
    assert got["error"].endswith(f"(ReadOnlyError: {READ_ONLY})"), got
    # A guest's own text that reads like the refusal is SQLite's error, not a refusal.
    got = sql(kinds, sql=f"SELECT * FROM \"ReadOnlyError: {READ_ONLY}\"")
    assert (got["type"], got["kind"]) == ("SqliteError", "sql"), got


def test_a_statement_cut_at_the_narrowed_deadline_is_that_kind(kinds: Probe) -> None:
    assert sql(kinds, sql=COUNT, narrow=50) == {
        "type": "SqliteError", "kind": "narrowed-deadline", "error": NARROWED}


@pytest.mark.parametrize(("doc", "kind", "begins"), [
    ({"cls": "nosuch", "id": "x"}, "unknown-class", "unknown: "),
    ({"cls": CLS, "id": "b", "protocol": "wk-workflow/v1"}, "not-declared",
     "error: class 'kinds' does not declare the protocol 'wk-workflow/v1'"),
    ({"cls": CLS, "id": "a"}, "refused", "refused: "),  # back into the caller
    ({"cls": CLS, "id": "b", "path": "/raise"}, "callee-trapped", "callee-trapped: "),
    ({"cls": CLS, "id": "b", "path": "/spin", "narrow": 100}, "narrowed-deadline",
     "timeout: the call to kinds/b passed the deadline the event set itself "
     "(lifecycle.narrow-deadline)"),
], ids=["unknown-class", "not-declared", "re-entry", "callee-trapped", "narrowed"])
def test_a_failed_call_carries_its_kind_beside_the_hosts_text(
        kinds: Probe, doc: dict[str, Any], kind: str, begins: str) -> None:
    got = call(kinds, **doc)
    assert (got["type"], got["kind"]) == ("CallError", kind), got
    assert got["error"].startswith(begins), got


def test_a_call_that_succeeds_after_a_failure_is_answered(kinds: Probe) -> None:
    """`last-error` is read on the error path only: a good call after a failed one is
    its answer, and the next failure its own kind."""
    assert call(kinds, cls="nosuch", id="x")["kind"] == "unknown-class"
    assert call(kinds, cls=CLS, id="b", path="/nothing") == {"ok": 404}
    assert call(kinds, cls=CLS, id="b", path="/raise")["kind"] == "callee-trapped"
