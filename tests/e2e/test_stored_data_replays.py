"""Stored data replays: a data directory written by commit 9401b45 (tests/e2e/data/wf_9401b45,
its README says how), served by today's host with its class built from today's sources.

Each of its instances stopped mid-flight in one feature: a sleep after every kind of
recorded value, a backoff, an attempt cut by a trap, a wait, an open group with a child
branch, a child, a saga compensating, a cancel with compensation, emits, a continue-as-new
in its second run, a pause. Today's runner must report each one as 9401b45's runner did
(snapshot.json), and then drive each to the end its code gives, running no recorded step
again.
"""

from __future__ import annotations

import importlib.util
import json
import math
import tarfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cbor2
import pytest

from .conftest import MakeServer
from .server import Server
from .workflow_support import FINISHED, rests_until

FIXTURE = Path(__file__).parent / "data" / "wf_9401b45"
CLS = "stored"
TIMEOUT = 60.0  # real seconds, for all the instances to finish
EDGES = [2**64 - 1, -(2**64), 0.1, math.inf, -math.inf, math.nan, "é☃", None, True]
# The events the test sends, and their payloads.
APPROVE = {"by": "ann"}
RELEASE = b"\x00released"
GO = ["go", 1]
SHIP = {"carrier": "post"}


def _load_make_data() -> Any:
    """The fixture's maker (a script beside its data, run in 9401b45's checkout): its
    `jsonable` is how snapshot.json keeps an answer."""
    spec = importlib.util.spec_from_file_location("make_data", FIXTURE / "make_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_data = _load_make_data()


def snapshot() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURE / "snapshot.json").read_text(encoding="utf-8"))
    return doc


class Stored:
    """The restored data directory, served, and the wk-workflow/v1 routes of its class."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def wk(self, id: str, route: str, msg: dict[str, Any] | None = None) -> Any:
        path = f"/{CLS}/{quote(id, safe='')}/wk-workflow/v1/{route}"
        code, _, data = self.server.request("POST", path, cbor2.dumps(msg or {}),
                                            {"Content-Type": "application/cbor"},
                                            operator=True)
        assert code == 200, (id, route, code, data[:500])
        return cbor2.loads(data)

    def status(self, id: str) -> dict[str, Any]:
        got: dict[str, Any] = self.wk(id, "status")
        return got

    def steps(self, id: str) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = self.wk(id, "steps", {"attempts": True, "values": True,
                                                          "value_bytes": 4096})["steps"]
        return got

    def events(self, id: str) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = self.wk(id, "events")["events"]
        return got

    def send(self, id: str, name: str, payload: Any) -> None:
        self.wk(id, "event", {"name": name, "payload": payload})

    def drive(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Move the clock to each next wake time until every instance has finished."""
        end = time.monotonic() + TIMEOUT
        while True:
            statuses = {id: self.status(id) for id in ids}
            if all(s["state"] in FINISHED for s in statuses.values()):
                return statuses
            if time.monotonic() > end:
                pytest.fail(f"not all finished after {TIMEOUT} s: {statuses}\n"
                            + "\n".join(self.server.log[-40:]), pytrace=False)
            now = self.server.advance(0)
            wakes = [w for id, s in statuses.items()
                     if (w := rests_until(s, partial(self.steps, id))) is not None]
            if wakes and min(wakes) > now:
                self.server.advance(min(wakes) - now)
            else:
                time.sleep(0.05)  # work due now: its events are running


@pytest.fixture
def stored(tmp_path: Path, make_server: MakeServer,
           build_guest: Callable[[str | Path], Path]) -> Iterator[Stored]:
    with tarfile.open(FIXTURE / "data.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    wasm = build_guest(FIXTURE / "app.py")
    # A restarted fake clock starts at the later of its kept time and the real one: the
    # real time is past the instances' backoffs, so the clock is started where it stood.
    stood = (tmp_path / "data" / "_host" / "fake-clock").read_text().strip()
    server = make_server(actors={CLS: wasm}, access={CLS: "internal"}, data=tmp_path / "data",
                         extra=["--fake-clock-start", str(int(stood))])
    yield Stored(server)


def _same(today: Any, then: Any, where: str) -> list[str]:
    """Where `today` differs from `then` (keys `then` lacks are new, and ignored)."""
    if isinstance(then, dict) and isinstance(today, dict) and "base64" not in then:
        out = []
        for k, v in then.items():
            out += (_same(today[k], v, f"{where}.{k}") if k in today
                    else [f"{where}.{k}: gone"])
        return out
    if isinstance(then, list) and isinstance(today, list) and len(then) == len(today):
        return [d for i, (a, b) in enumerate(zip(today, then, strict=True))
                for d in _same(a, b, f"{where}[{i}]")]
    return [] if today == then else [f"{where}: {today!r}, was {then!r}"]


def test_today_reads_the_stored_instances_as_they_were_written(stored: Stored) -> None:
    snap = snapshot()["instances"]
    diffs = []
    for id, then in snap.items():
        today = {"status": stored.status(id), "steps": stored.steps(id),
                 "events": stored.events(id)}
        diffs += _same(make_data.jsonable(today), then, id)
    assert diffs == []


def _recorded(snap: dict[str, Any], id: str, name: str) -> Any:
    """The value 9401b45 recorded at position `name` of instance `id` (as stored)."""
    step = next(s for s in snap[id]["steps"] if s["name"] == name)
    return json.loads(step["value"])


def _history(steps: list[dict[str, Any]], name: str) -> list[str]:
    step = next(s for s in steps if s["name"] == name)
    return [a["outcome"] for a in step["history"]]


def _nan_safe(v: Any) -> Any:
    """`v` with NaN as a marker, so that == compares it."""
    if isinstance(v, float) and math.isnan(v):
        return "<nan>"
    if isinstance(v, list):
        return [_nan_safe(x) for x in v]
    if isinstance(v, dict):
        return {k: _nan_safe(x) for k, x in v.items()}
    return v


def test_stored_instances_run_to_their_ends(stored: Stored) -> None:
    doc = snapshot()
    snap = doc["instances"]
    ids = list(snap)
    stored.send("wait", "approve", APPROVE)
    stored.send("group", "go", GO)
    stored.send("group", "approve", APPROVE)
    for kid in ("group-kid", "parent-kid"):
        stored.send(kid, "release", RELEASE)
    stored.send("emit", "ship", SHIP)
    assert stored.wk("pause", "resume")["state"] == "waiting"
    end = stored.drive(ids)

    def output(id: str) -> Any:
        s = end[id]
        assert s["state"] == "completed", (id, s)
        return s["output"]

    kid = {"k": "k", "release": RELEASE}
    run_id = snap["steps"]["status"]["run_id"]
    assert _nan_safe(output("steps")) == _nan_safe({
        "plain": {"item": "book", "qty": 2}, "bytes": b"\x00\x01%PDF",
        "nul": "\x00 starts with NUL", "nested": {"b": [b"x", "\x00s", {"deep": b""}], "n": 1},
        "edges": EDGES, "key": f"{run_id}-5", "declined": [False, "card declined", 1],
        "booked": 5, "now": _recorded(snap, "steps", "now"),
        "random": _recorded(snap, "steps", "random"),
        "uuid": _recorded(snap, "steps", "uuid"), "patched": True})
    assert output("retry") == {"done": True}
    assert _history(stored.steps("retry"), "flaky") == ["failed", "failed", "returned"]
    assert output("cut") == "survived"
    assert _history(stored.steps("cut"), "fragile") == ["cut", "returned"]
    assert output("wait") == {"note": b"\x00note", "approve": APPROVE, "later": {"x": 1}}
    assert output("group") == {
        "fan": ["A", b"\x00B"],
        "settled": [[True, 1, None], [True, "F", None], [False, None, "card declined"],
                    [True, GO, None], [True, None, None], [True, kid, None]],
        "won": [0, APPROVE]}
    assert output("parent") == {"before": "b", "child": kid}
    assert output("parent-kid") == output("group-kid") == kid
    assert output("emit") == {"packed": "packed", "by": SHIP}
    assert [(e["offset"], e["name"], e["payload"]) for e in stored.events("emit")] == [
        (0, "started", {"item": "book"}), (1, "packed", b"\x00box"), (2, "shipped", {"by": SHIP})]
    assert output("chain") == {"runs": 3, "total": 60}
    assert end["chain"]["runs"] == 3
    assert [e["payload"] for e in stored.events("chain")] == [
        {"run": 1, "total": 10}, {"run": 2, "total": 30}, {"run": 3, "total": 60}]
    assert output("pause") == {"first": 1, "second": 2}
    for id, state, undone in (("saga", "failed", ["c", "b", "a"]),
                              ("saga-cancel", "cancelled", ["y", "x"])):
        assert end[id]["state"] == state, (id, end[id])
        comp = [s for s in stored.steps(id) if s["name"].startswith("compensate:")]
        assert [(s["name"], s["state"]) for s in comp] == [
            (f"compensate:book {e}", "done") for e in undone]
        assert [s["attempts"] for s in comp] == [2 if e in ("b", "y") else 1 for e in undone]
        assert json.loads(comp[-1]["value"]) == 0  # every booking undone, once
    assert "card declined" in end["saga"]["error"]
