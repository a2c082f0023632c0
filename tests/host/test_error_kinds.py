"""A real guest's failed SQL, actor calls and fetches carry the host's kind beside the
host's text (WIT `sqlite.last-error`, `actors.last-error`, `http.last-error`), as the
SDK's `SqliteError.kind`, `CallError.kind` and `FetchError.kind`: an SQL error, a write
in a read-only event, a statement cut at the deadline the guest set itself; a call to a
class not served, to a class that does not declare the request's protocol, back into the
caller, into a callee that traps, and one cut at the caller's narrowed deadline; a fetch
not allowed, refused, timed out, cut at the narrowed deadline, too large, broken off,
malformed, to servers on 127.0.0.1 that the test starts. The texts are the host's, as
before: a fetch's are byte for byte those a build from before `http.last-error` reads.
The guest is tests/guests/error_kinds.py."""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.fetch import FetchPolicy
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
    yield from _host(tmp_path, {CLS: error_kinds_wasm})


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


class _Site(http.server.BaseHTTPRequestHandler):
    """/big: a body over the policy's cap; /cut: a body broken off; else a short one."""

    def do_GET(self) -> None:  # noqa: N802
        body = b"x" * (4 * BODY_CAP if self.path == "/big" else 8)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body) + (10 if self.path == "/cut" else 0)))
        self.end_headers()
        self.wfile.write(body)
        if self.path == "/cut":
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args: object) -> None:
        pass


BODY_CAP = 1000


class Sites:
    """What the fetches go to, on 127.0.0.1: a site, a port that accepts and never
    answers (`silent`), and one where nothing listens (`closed`); each on the
    allow-list."""

    def __enter__(self) -> Sites:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.site = f"127.0.0.1:{self.server.server_address[1]}"
        self.quiet = socket.create_server(("127.0.0.1", 0))
        self.silent = f"127.0.0.1:{self.quiet.getsockname()[1]}"
        with socket.create_server(("127.0.0.1", 0)) as gone:
            self.closed = f"127.0.0.1:{gone.getsockname()[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.quiet.close()

    def policy(self) -> FetchPolicy:
        return FetchPolicy(allow=(self.site, self.silent, self.closed),
                           max_response_bytes=BODY_CAP)


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    with Sites() as s:
        yield s


def _host(tmp_path: Path, classes: dict[str, Path],
          policy: FetchPolicy | None = None) -> Iterator[Probe]:
    """A host serving `classes`, with the fetch `policy` given (else the default)."""
    clock = FakeClock(START_MS)
    config = HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED)
    if policy is not None:
        config = dataclasses.replace(config, http=policy)
    host = Host(config, clock)
    try:
        for cls, wasm in classes.items():
            host.add_class(cls, wasm)
        host.start()
        yield Probe(host, clock)
    finally:
        with contextlib.suppress(Exception):
            host.close(timeout_s=2)


@pytest.fixture
def fetching(tmp_path: Path, error_kinds_wasm: Path, sites: Sites) -> Iterator[Probe]:
    yield from _host(tmp_path, {CLS: error_kinds_wasm}, sites.policy())


def fetch(p: Probe, **doc: Any) -> dict[str, Any]:
    got: dict[str, Any] = p.json("a", "POST", "/fetch", doc, cls=CLS)
    return got


# (the request, given the sites; its kind; how its text begins)
FETCHES: list[tuple[Any, str, str]] = [
    (lambda s: {"url": "http://10.0.0.1/"}, "denied", "denied: "),
    (lambda s: {"url": f"http://{s.closed}/"}, "connect", "connect: "),
    (lambda s: {"url": f"http://{s.silent}/", "timeout_ms": 200}, "timeout",
     "timeout: the 200 ms timeout passed while "),
    (lambda s: {"url": f"http://{s.silent}/", "timeout_ms": 60_000, "narrow": 200},
     "narrowed-deadline", "timeout: the event's time ran out while "),
    (lambda s: {"url": f"http://{s.site}/big"}, "too-large", "too-large: "),
    (lambda s: {"url": f"http://{s.site}/cut"}, "incomplete", "incomplete: "),
    (lambda s: {"url": "ftp://example.com/"}, "invalid", "invalid: "),
]
NARROWED_KIND = "narrowed-deadline"  # an old build reads it as "timeout"
FETCH_IDS = ["denied", "connect", "timeout", "narrowed", "too-large", "incomplete", "invalid"]


@pytest.mark.parametrize(("doc", "kind", "begins"), FETCHES, ids=FETCH_IDS)
def test_a_failed_fetch_carries_its_kind_beside_the_hosts_text(
        fetching: Probe, sites: Sites, doc: Any, kind: str, begins: str) -> None:
    got = fetch(fetching, **doc(sites))
    assert (got["type"], got["kind"]) == ("FetchError", kind), got
    assert got["error"].startswith(begins), got
    narrowed = got["error"].endswith(", at the deadline the event set itself "
                                     "(lifecycle.narrow-deadline)")
    assert narrowed == (kind == "narrowed-deadline"), got


def test_a_fetch_that_succeeds_after_a_failure_is_answered(
        fetching: Probe, sites: Sites) -> None:
    assert fetch(fetching, url=f"http://{sites.closed}/")["kind"] == "connect"
    assert fetch(fetching, url=f"http://{sites.site}/ok") == {"ok": 200}
    assert fetch(fetching, url="http://10.0.0.1/")["kind"] == "denied"


@pytest.fixture
def old_and_new(tmp_path: Path, error_kinds_wasm: Path, sites: Sites) -> Iterator[Probe]:
    """The probe as built before `http.last-error` (test_old_builds.py's), beside the
    guest built now."""
    from .test_old_builds import build_old_probe

    yield from _host(tmp_path, {CLS: error_kinds_wasm, "probe": build_old_probe()},
                     sites.policy())


@pytest.mark.parametrize(("doc", "kind"),
                         [(doc, kind) for doc, kind, _ in FETCHES if kind != NARROWED_KIND],
                         ids=[i for i in FETCH_IDS if i != "narrowed"])
def test_a_failed_fetchs_text_is_the_one_an_old_build_reads(
        old_and_new: Probe, sites: Sites, doc: Any, kind: str) -> None:
    """The old build links the interface that gained `last-error`, and reads the same
    text with the kind it tells from the text's first word."""
    old = old_and_new.json("o", "POST", "/fetch", doc(sites))
    new = fetch(old_and_new, **doc(sites))
    assert (old["error_kind"], new["kind"]) == (kind, kind), (old, new)
    assert old["error"] == new["error"]
