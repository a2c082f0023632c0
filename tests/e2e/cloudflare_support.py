"""Support for the Cloudflare-shaped API's e2e tests (tests/e2e/test_cloudflare_*.py):
seed 003's example (examples/workflows/ingest) built once, served by a real `wkhost serve`,
and driven through its `api` actor, whose routes make every call of the binding
(`wkguest.cloudflare.Workflow`) from inside an actor.

    ex = Example(server)
    iid = ex.index("m-25")                          # POST /materials/index, as seed 003
    ex.drive("ingest", iid, waiting_for_event)      # moves the fake clock to each wake time
    ex.ok("POST", f"/materials/{iid}/review", {"ok": True})
    s = ex.drive("ingest", iid, finished)           # the runner's status map
    ex.cf("ingest", iid)["status"]                  # "complete": Cloudflare's name

Every wait is bounded in real time (workflow_support.TIMEOUT); the 10-second retry
delays, the minute's sleep and the day's timeout are crossed with the host's fake clock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cbor2
import pytest
from wkhost.cli.client import WorkflowAdmin

from .server import Server
from .workflow_support import DAY, TIMEOUT, Pred, Status

EXAMPLE = "examples/workflows/ingest"
SOURCES = {
    "ingest": f"{EXAMPLE}/app.py",        # IngestMaterial (flow.py)
    "publish": f"{EXAMPLE}/publish.py",   # PublishMaterial: rollbacks
    "pages": f"{EXAMPLE}/pages.py",       # what their steps call; counts every call
    "api": f"{EXAMPLE}/api.py",           # the public app: INGEST = Workflow("ingest")
}
ACCESS = {"ingest": "internal", "publish": "internal", "pages": "internal"}
RESTING = ("completed", "failed", "cancelled", "terminated", "parked", "paused")


@pytest.fixture(scope="session")
def cf_wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    """The example's four components, built once (content-hash cached)."""
    return {name: build_guest(src) for name, src in SOURCES.items()}


def waiting_for_event(s: Status) -> bool:
    """Waiting for an event (not a sleep, which waits for nothing but its time)."""
    return s.get("state") == "waiting" and bool(s.get("waiting_for"))


def resting(s: Status) -> bool:
    return s.get("state") in RESTING


class Example:
    """The example's classes on one running server, and what the tests do with them."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.admin = WorkflowAdmin(server.url, server.token)

    # the public api actor -------------------------------------------------------------
    def api(self, method: str, path: str, payload: Any = None) -> tuple[int, Any]:
        return self.server.actor("api", "main", method, path, payload, operator=False)

    def ok(self, method: str, path: str, payload: Any = None) -> Any:
        status, body = self.api(method, path, payload)
        assert status == 200, (method, path, status, body)
        return body

    def index(self, material_id: str) -> str:
        """Seed 003's route: a new ingest instance for the material; its id."""
        iid = self.ok("POST", "/materials/index", {"materialId": material_id})["id"]
        assert isinstance(iid, str)
        return iid

    def create(self, binding: str, id: str | None = None, **params: Any) -> str:
        body: dict[str, Any] = {"params": params} | ({} if id is None else {"id": id})
        iid = self.ok("POST", f"/workflows/{binding}", body)["id"]
        assert isinstance(iid, str)
        return iid

    def cf(self, binding: str, iid: str) -> dict[str, Any]:
        """`get(iid).status()` through the api actor: Cloudflare's name and the runner's."""
        body: dict[str, Any] = self.ok("GET", f"/workflows/{binding}/{quote(iid, safe='')}")
        return body

    def move(self, binding: str, iid: str, what: str, payload: Any = None) -> dict[str, Any]:
        body: dict[str, Any] = self.ok("POST", f"/workflows/{binding}/{quote(iid, safe='')}/"
                                       f"{what}", payload or {})
        return body

    # the runner's own view, as the operator -------------------------------------------
    def status(self, cls: str, iid: str) -> Status:
        path = f"/{cls}/{quote(iid, safe='')}/wk-workflow/v1/status"
        code, _, data = self.server.request("POST", path, cbor2.dumps({}),
                                            {"Content-Type": "application/cbor"},
                                            operator=True)
        assert code == 200, (cls, iid, code, data[:300])
        body = cbor2.loads(data)
        assert isinstance(body, dict)
        return body

    def steps(self, cls: str, iid: str) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.admin.steps(cls, iid)
        return steps

    def summary(self, cls: str, iid: str) -> list[tuple[str, str, str, int]]:
        """(kind, name, state, attempts) of each recorded position."""
        return [(s["kind"], s["name"], s["state"], s["attempts"])
                for s in self.steps(cls, iid)]

    # the pages actor's books ----------------------------------------------------------
    def calls(self) -> dict[tuple[str, str], int]:
        status, body = self.server.actor("pages", "main", "GET", "/calls", operator=True)
        assert status == 200, (status, body)
        return {(op, key): n for op, key, n in body["calls"]}

    def search_index(self) -> tuple[set[str], dict[str, str | None]]:
        """The keys indexed, and those taken out again with the error each was told."""
        status, body = self.server.actor("pages", "main", "GET", "/index", operator=True)
        assert status == 200, (status, body)
        return set(body["indexed"]), {k: why for k, why in body["unindexed"]}

    # the clock, and waiting (bounded) --------------------------------------------------
    def now(self) -> int:
        return self.server.advance(0)

    def wait_for(self, cls: str, iid: str, pred: Pred, timeout: float = TIMEOUT) -> Status:
        """Poll the runner's status until `pred` holds, without moving the clock."""
        end = time.monotonic() + timeout
        s = self.status(cls, iid)
        while not pred(s):
            if time.monotonic() > end:
                self.fail_waiting(cls, iid, s, timeout)
            time.sleep(0.02)
            s = self.status(cls, iid)
        return s

    def rests_until(self, cls: str, iid: str, s: Status) -> int | None:
        """When an unfinished instance next runs (its wake time, or its retrying step's
        next attempt); None: it has work to do now, or it rests for good."""
        if resting(s):
            return None
        if s.get("wake_at") is not None:
            return int(s["wake_at"])
        steps = self.steps(cls, iid)
        if steps and steps[-1]["state"] == "retrying" and steps[-1]["next_attempt_at"]:
            return int(steps[-1]["next_attempt_at"])
        return None

    def drive(self, cls: str, iid: str, pred: Pred, timeout: float = TIMEOUT,
              max_advance_ms: int = 3 * DAY) -> Status:
        """Poll until `pred` holds, moving the clock to each time the instance rests
        until (a retry's delay, a sleep, a wait's timeout). Stop before a state you want
        to see: a timeout is crossed as readily as a delay."""
        end = time.monotonic() + timeout
        moved = 0
        s = self.status(cls, iid)
        while not pred(s):
            if time.monotonic() > end:
                self.fail_waiting(cls, iid, s, timeout)
            wake, now = self.rests_until(cls, iid, s), self.now()
            if wake is not None and wake > now:
                assert moved + wake - now <= max_advance_ms, (iid, s, moved)
                moved += wake - now
                self.server.advance(wake - now)
            else:
                time.sleep(0.02)
            s = self.status(cls, iid)
        return s

    def fail_waiting(self, cls: str, iid: str, s: Status, timeout: float) -> None:
        log = "\n".join(self.server.log[-40:])
        steps = json.dumps(self.steps(cls, iid), indent=1, default=str)[:4000]
        pytest.fail(f"{cls}/{iid}: not there after {timeout} s; last status {s}\n"
                    f"steps {steps}\nserver log:\n{log}", pytrace=False)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory,
            cf_wasm: dict[str, Path]) -> Iterator[Example]:
    """One server for a module's tests (each test uses ids of its own)."""
    yield from _serve(tmp_path_factory, cf_wasm, "warm")


@pytest.fixture(scope="module", params=["warm", "always-replay"])
def example_modes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  cf_wasm: dict[str, Path]) -> Iterator[Example]:
    """The same, once as served normally and once with `--always-fresh-instance` (a new
    instance for every event: every step is reached by replay from the journal)."""
    yield from _serve(tmp_path_factory, cf_wasm, str(request.param))


def _serve(tmp_path_factory: pytest.TempPathFactory, cf_wasm: dict[str, Path],
           mode: str) -> Iterator[Example]:
    extra = ["--always-fresh-instance"] if mode == "always-replay" else []
    server = Server(tmp_path_factory.mktemp(f"cf-{mode}") / "data", cf_wasm, extra, ACCESS)
    try:
        yield Example(server.start())
    finally:
        if server.proc is not None:
            server.stop()
