"""lifecycle.narrow-deadline on a real `wkhost serve`: after a guest narrows its deadline,
a long SQL statement, a fetch, an actor call and pure CPU are each cut at it, with errors
(or a trap reason) that name it; lifting it restores the event's own deadline; it never
leaks into the next call into the guest, and never extends the event's deadline.

The guest is tests/guests/narrow.py: each request runs a list of steps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wkhost.engine.instance import NARROWED, WALL_CLOCK

from ..conftest import BuildGuest
from .local_http import late_site
from .server import Server

pytestmark = pytest.mark.e2e

# Far more rows than a statement counts in the narrowed 200 ms (about 6 M a second here),
# and few enough to count in the event's own budget.
BIG = 8_000_000
MARK = "lifecycle.narrow-deadline"


@pytest.fixture(scope="module")
def slow_site() -> Iterator[str]:
    with late_site() as site:
        yield site


@pytest.fixture(scope="module")
def narrow_wasm(build_guest: BuildGuest) -> Path:
    return build_guest("narrow")


def _serve(data: Path, wasm: Path, *extra: str) -> Iterator[Server]:
    # A CPU budget far past the narrowed deadlines: only wall-clock deadlines cut here.
    server = Server(data, {"narrow": wasm}, ["--cpu-budget-ms", "20000", *extra])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, narrow_wasm: Path,
           slow_site: str) -> Iterator[Server]:
    yield from _serve(tmp_path_factory.mktemp("narrow") / "data", narrow_wasm,
                      "--allow-http", slow_site)


def run(server: Server, actor_id: str, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    status, body = server.actor("narrow", actor_id, "POST", "/run", {"steps": list(steps)})
    assert status == 200, body
    results: list[dict[str, Any]] = body["results"]
    return results


def still_serving(server: Server) -> None:
    assert run(server, "neighbour", {"sql": 10}) == [{"ok": 10}]


def test_a_long_statement_is_interrupted_at_it_and_runs_to_its_end_once_lifted(
        server: Server) -> None:
    results = run(server, "sql", {"narrow": 200}, {"sql": BIG}, {"narrow": None},
                  {"sql": BIG})
    assert results[0] == {"ok": None}
    cut = results[1]["error"]
    assert cut.startswith("interrupted:") and MARK in cut, results
    assert results[3] == {"ok": BIG}  # the same statement, bounded by the event's own
    still_serving(server)


def test_a_slow_fetch_ends_in_a_timeout_naming_it(server: Server, slow_site: str) -> None:
    results = run(server, "fetch", {"narrow": 200}, {"fetch": f"http://{slow_site}/"})
    cut = results[1]["error"]
    assert cut.startswith("timeout:") and MARK in cut, results
    still_serving(server)


def test_a_call_to_an_actor_that_runs_long_ends_with_the_deadline_error(
        server: Server) -> None:
    results = run(server, "caller", {"narrow": 200},
                  {"call": "callee", "steps": [{"spin_ms": 10_000}]})
    cut = results[1]["error"]
    assert cut.startswith("timeout:") and MARK in cut, results
    # The callee's event had the caller's narrowed deadline as its own: cut at it.
    assert run(server, "callee", {"last_trap": True}) == [{"ok": WALL_CLOCK}]
    still_serving(server)


def test_pure_cpu_traps_with_its_own_reason_which_the_next_event_reads(
        server: Server) -> None:
    status, body = server.actor("narrow", "cpu", "POST", "/run",
                                {"steps": [{"narrow": 200}, {"spin_ms": 10_000}]})
    assert status == 503 and NARROWED in str(body), (status, body)
    assert run(server, "cpu", {"last_trap": True}) == [{"ok": NARROWED}]
    still_serving(server)


def test_after_a_cut_host_call_the_guest_runs_on_to_handle_the_error(
        server: Server) -> None:
    """Past the narrowed deadline, a host call's error reaches the guest, whose code then
    runs as far as the event's own deadline (here: a loop past the narrowed one)."""
    results = run(server, "handles", {"narrow": 200}, {"sql": BIG}, {"spin_ms": 400},
                  {"narrow": None}, {"sql": 10})
    assert results[1]["error"].startswith("interrupted:"), results
    assert results[2:] == [{"ok": None}, {"ok": None}, {"ok": 10}]


def test_it_does_not_leak_into_the_next_call_into_the_same_instance(
        server: Server) -> None:
    assert run(server, "leak", {"narrow": 100}) == [{"ok": None}]  # never lifted
    assert run(server, "leak", {"spin_ms": 400}, {"sql": BIG}) == [
        {"ok": None}, {"ok": BIG}]
    # narrowed in on_init (the same event's first call into the guest), never lifted
    assert run(server, "init-narrow-1", {"spin_ms": 400}) == [{"ok": None}]


@pytest.fixture
def short_server(tmp_path: Path, narrow_wasm: Path) -> Iterator[Server]:
    yield from _serve(tmp_path / "data", narrow_wasm, "--wall-budget-ms", "1000")


def test_a_deadline_past_the_events_own_changes_nothing(short_server: Server) -> None:
    status, body = short_server.actor("narrow", "far", "POST", "/run",
                                      {"steps": [{"narrow": 600_000}, {"spin_ms": 10_000}]})
    assert status == 503 and WALL_CLOCK in str(body), (status, body)
    assert run(short_server, "far", {"last_trap": True}) == [{"ok": WALL_CLOCK}]
    # The statement is cut at the event's own deadline, with its own error. (The guest
    # may then trap at that deadline too, before it answers, or answer in the tick past
    # it that the epoch deadline rounds up to.)
    status, body = short_server.actor("narrow", "far", "POST", "/run",
                                      {"steps": [{"narrow": 600_000}, {"sql": 10 * BIG}]})
    if status == 503:
        assert WALL_CLOCK in str(body), body
    else:
        cut = body["results"][1]["error"]
        assert status == 200 and cut.startswith("interrupted:"), (status, body)
        assert "wall-clock budget" in cut and MARK not in cut, cut
