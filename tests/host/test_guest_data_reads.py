"""Reads of an actor's database that meet data the host cannot use (issue 36, items 4-5):
text that is not UTF-8, and any failure at all of the one path every read goes through
(storage/statements.py's runner and the conversion of what comes back).

The rule: an event's end path releases the actor whatever fails in it, and a failure of
host code that reads guest data is that event's error (an SQL error the guest handles,
or a one-line HostError), never the host's (an unexpected exception) nor a wedge."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from wkhost.errors import DeadlineExceeded, HostError
from wkhost.storage import statements
from wkhost.types import Response

from .support import MakeProbe, Probe

# A wedged actor shows as a DeadlineExceeded of the next request, soon.
WALL_MS = 3000

NOT_UTF8 = ("SELECT CAST(x'ff' AS TEXT)", "SELECT char(55296)",
            "SELECT 1 AS a, 'fine' AS b UNION ALL SELECT 2, CAST(x'41ff42' AS TEXT)")


def post(probe: Probe, actor_id: str, route: str, sql: str) -> Response:
    return probe.send(actor_id, "POST", route, json.dumps({"sql": sql, "params": []}))


def served(probe: Probe, actor_id: str) -> None:
    """The actor answers its next request: nothing of an earlier event holds it."""
    assert probe.sql(actor_id, "SELECT 41 + 1")["rows"] == [[42]]


# -- item 5: a guest's own result ------------------------------------------------------------
@pytest.mark.parametrize("route", ["/sql", "/query", "/write"])
def test_text_that_is_not_utf8_is_an_sql_error_never_a_trap(make_probe: MakeProbe,
                                                            route: str) -> None:
    probe = make_probe(wall_budget_ms=WALL_MS)
    for sql in NOT_UTF8:
        resp = post(probe, "a", route, sql)
        assert resp.status == 200, (sql, resp.status, resp.body[:300])
        error = json.loads(resp.body)["error"]
        assert "not valid UTF-8" in error and "row " in error, error
        assert "\n" not in error
    served(probe, "a")
    # The bytes are still the guest's to read, as a blob.
    rows = probe.sql("a", "SELECT CAST(CAST(x'41ff' AS TEXT) AS BLOB)")["rows"]
    assert rows == [[{"b64": "Qf8="}]]


# -- the rule, by fault injection on the one path ---------------------------------------
class Faults:
    """Wraps the runner's inner step (`statements._run`: the statement and the conversion
    of its rows), counting every read of an actor's database, and makes read number
    `armed` fail with `error`, before the statement runs or after it ran."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.reads = 0
        self.armed: int | None = None
        self.after = False
        self.error: BaseException = RuntimeError("injected")

    def __call__(self, *args: Any, **kw: Any) -> Any:
        self.reads += 1
        hit = self.reads == self.armed
        if hit and not self.after:
            raise self.error
        out = self.real(*args, **kw)
        if hit:
            raise self.error
        return out


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Faults:
    f = Faults(statements._run)
    monkeypatch.setattr(statements, "_run", f)
    return f


ERRORS: list[Callable[[], BaseException]] = [
    lambda: RuntimeError("injected"),
    lambda: MemoryError(),
    lambda: UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
]

# What each event is: the actor's creation (its on-init), a guest read, a guest write.
EVENTS: dict[str, tuple[str, str]] = {
    "create": ("/sql", "SELECT 1"),
    "exec": ("/sql", "SELECT count(*) FROM log"),
    "packed": ("/query", "SELECT kind, at FROM log"),
    "write": ("/write", "INSERT INTO log VALUES ('w', 0)"),
}


def outcome(probe: Probe, actor_id: str, route: str, sql: str) -> str:
    """How an event under a fault ended: its answer, or its HostError. Anything else (an
    unexpected exception: the host's error, a 500 "internal error") fails the test."""
    try:
        resp = post(probe, actor_id, route, sql)
    except DeadlineExceeded:
        raise AssertionError(f"{actor_id} was held: a wedged actor") from None
    except HostError as e:
        assert "\n" not in str(e)
        return f"{type(e).__name__}"
    assert resp.status == 200, (resp.status, resp.body[:300])
    return "sql error" if "error" in json.loads(resp.body) else "ok"


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("event", list(EVENTS))
def test_any_failure_of_a_read_is_that_events_error_and_releases_the_actor(
        make_probe: MakeProbe, faults: Faults,
        event: str, after: bool) -> None:
    probe = make_probe(wall_budget_ms=WALL_MS)
    route, sql = EVENTS[event]

    def actor_for(k: int, e: int) -> str:
        return f"{event}-{k}-{e}"

    def prepare(actor_id: str) -> None:
        if event != "create":
            probe.sql(actor_id, "SELECT 1")  # exists

    # How many reads the event does, unharmed (a new actor's: from its creation on).
    prepare("count")
    before = faults.reads
    assert outcome(probe, "count", route, sql) == "ok"
    reads = faults.reads - before
    assert reads >= 1, reads  # the guest's, and any of the host's own
    seen: set[str] = set()
    for k in range(reads):
        for e, make_error in enumerate(ERRORS):
            actor_id = actor_for(k, e)
            prepare(actor_id)
            faults.armed, faults.after, faults.error = faults.reads + k + 1, after, make_error()
            seen.add(outcome(probe, actor_id, route, sql))
            faults.armed = None
            served(probe, actor_id)
    # The guest's own read was among them, and it heard of it as an SQL error.
    assert event == "create" or "sql error" in seen, seen
