"""Support for the workflow e2e tests: the example components, a server that serves them,
and polling that moves the host's fake clock instead of sleeping through time.

    def test_x(shop_factory):
        shop = shop_factory()                       # orders, ledger (internal) and app
        shop.app_start("o1", cool_off_ms=HOUR)      # through the public app actor
        s = shop.wait_for("o1", waiting_for("approved"))
        shop.approve("o1")
        s = shop.drive("o1", finished)              # advances the clock to each wake time

Every wait is bounded (TIMEOUT seconds of real time). Real sleeps are only the short
pauses of a poll while events run; backoffs, sleeps and timeouts are crossed with
`Server.advance`. The fixtures are imported by the test modules (`from .workflow_support
import ...`): tests/e2e/conftest.py is shared with other suites.
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

from .conftest import MakeServer
from .server import Server

TIMEOUT = 30.0  # real seconds, for any one wait
SECOND = 1000
HOUR = 3_600_000
DAY = 86_400_000
RETENTION = 7 * DAY  # examples/workflows/orders/app.py

EXAMPLES = "examples/workflows"
SOURCES = {
    "orders": f"{EXAMPLES}/orders/app.py",
    "orders_reordered": f"{EXAMPLES}/orders/app_reordered.py",
    "ledger": f"{EXAMPLES}/ledger/app.py",
    "app": f"{EXAMPLES}/app/app.py",
}
INTERNAL = {"orders": "internal", "ledger": "internal"}

# An order's input without knobs: no trap, no charge failure, a 1 s cool-off.
ORDER: dict[str, Any] = {"item": "book", "qty": 1, "amount": 1200}

Status = dict[str, Any]  # the protocol's status map (docs/workflow-protocol.md)
Pred = Callable[[Status], bool]


# -- fixtures ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def workflow_wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    """The four example components, built once (content-hash cached)."""
    return {name: build_guest(src) for name, src in SOURCES.items()}


ShopFactory = Callable[..., "Shop"]


@pytest.fixture(params=["warm", "always-replay"])
def shop_factory(request: pytest.FixtureRequest, make_server: MakeServer,
                 workflow_wasm: dict[str, Path], tmp_path: Path) -> Iterator[ShopFactory]:
    """shop_factory(data=None, orders="orders", access=INTERNAL, extra=None) -> Shop.

    `orders` names the component served as the class `orders` ("orders_reordered" for
    the bad deploy); `data` defaults to one directory per test, so a second call with
    the same `data` is a restart on the same state.

    Every test using it runs twice: as served normally, and in "always replay" mode
    (`--always-fresh-instance`: a new instance for every event, so the runner's warm
    journal cache never helps and every step is reached by replay from the journal)."""
    always_replay = ["--always-fresh-instance"] if request.param == "always-replay" else []

    def make(data: Path | None = None, orders: str = "orders",
             access: dict[str, str] | None = None, extra: list[str] | None = None) -> Shop:
        actors = {"orders": workflow_wasm[orders], "ledger": workflow_wasm["ledger"],
                  "app": workflow_wasm["app"]}
        server = make_server(actors=actors, access=INTERNAL if access is None else access,
                             data=data or tmp_path / "data",
                             extra=[*always_replay, *(extra or [])])
        return Shop(server)

    yield make


# -- predicates on a status map ----------------------------------------------------------

FINISHED = ("completed", "failed", "cancelled", "terminated")


def finished(s: Status) -> bool:
    return s.get("state") in FINISHED


def rests_until(s: Status, steps: Callable[[], list[dict[str, Any]]]) -> int | None:
    """When an unfinished instance next runs: its status's wake_at, or else (the status of
    an instance whose step trapped does not say) its retrying step's next attempt, from
    `steps()` (its steps, asked only then). None: it has work to do now, or it is finished."""
    if finished(s):
        return None
    if s.get("wake_at") is not None:
        return int(s["wake_at"])
    rows = steps()
    if rows and rows[-1]["state"] == "retrying" and rows[-1]["next_attempt_at"]:
        return int(rows[-1]["next_attempt_at"])
    return None


def in_state(*states: str) -> Pred:
    return lambda s: s.get("state") in states


def waiting_for(name: str) -> Pred:
    return lambda s: s.get("state") == "waiting" and name in (s.get("waiting_for") or [])


# -- the served example ------------------------------------------------------------------

class Shop:
    """The example classes on one running server, and what the tests do with them."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.admin = WorkflowAdmin(server.url, server.token)

    # the clock -----------------------------------------------------------------------
    def now(self) -> int:
        return self.server.advance(0)

    def advance(self, ms: int) -> int:
        return self.server.advance(ms)

    def advance_to(self, at_ms: int) -> int:
        """Move the clock to `at_ms` at least (a restarted fake clock resumes where it was,
        never behind what the data directory has seen: then this moves nothing)."""
        return self.server.advance(max(0, at_ms - self.now()))

    # the public app actor (it calls orders through wkguest.workflow.Client) -----------
    def app(self, method: str, path: str, payload: Any = None) -> tuple[int, Any]:
        return self.server.actor("app", "web", method, path, payload, operator=False)

    def app_start(self, oid: str, **knobs: Any) -> Any:
        status, body = self.app("POST", f"/orders/{oid}", {**ORDER, **knobs})
        assert status == 200, (status, body)
        return body

    def approve(self, oid: str, by: str = "ann") -> tuple[int, Any]:
        return self.app("POST", f"/orders/{oid}/approve", {"by": by})

    # wk-workflow/v1 as the operator, raw: every key of the answer, and the status code --
    def wk(self, oid: str, route: str, msg: dict[str, Any] | None = None,
           cls: str = "orders", operator: bool = True) -> tuple[int, Any]:
        path = f"/{cls}/{quote(oid, safe='')}/wk-workflow/v1/{route}"
        body = cbor2.dumps(msg or {})
        status, headers, data = self.server.request(
            "POST", path, body, {"Content-Type": "application/cbor"}, operator=operator)
        ctype = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        if ctype.startswith("application/cbor"):
            return status, cbor2.loads(data)
        return status, data.decode(errors="replace")

    def status(self, oid: str) -> Status:
        code, body = self.wk(oid, "status")
        assert code == 200, (oid, code, body)
        assert isinstance(body, dict)
        return body

    def steps(self, oid: str) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.admin.steps("orders", oid)
        return steps

    def step(self, oid: str, name: str) -> dict[str, Any]:
        """The (last) recorded position named `name`."""
        found = [st for st in self.steps(oid) if st["name"] == name]
        assert found, (oid, name, self.steps(oid))
        return found[-1]

    def has_step(self, oid: str, name: str, **fields: Any) -> bool:
        """Whether the last position named `name` is recorded, with these field values
        (for polling: the position may not be reached yet)."""
        found = [st for st in self.steps(oid) if st["name"] == name]
        return bool(found) and all(found[-1].get(k) == v for k, v in fields.items())

    def actor_ids(self, cls: str = "orders") -> list[str]:
        ids: list[str] = self.admin.ids(cls)
        return ids

    # the ledger: how many times each (op, key) was called -----------------------------
    def calls(self) -> dict[tuple[str, str], int]:
        status, body = self.server.actor("ledger", "main", "GET", "/calls", operator=True)
        assert status == 200, (status, body)
        return {(op, key): n for op, key, n in body["calls"]}

    def charges(self) -> list[list[Any]]:
        """The charges the ledger recorded: [key, order, amount] each."""
        status, body = self.server.actor("ledger", "main", "GET", "/charges", operator=True)
        assert status == 200, (status, body)
        return list(body["charges"])

    # waiting, bounded -------------------------------------------------------------------
    def wait_for(self, oid: str, pred: Pred, timeout: float = TIMEOUT) -> Status:
        """Poll the status until `pred` holds, without moving the clock."""
        end = time.monotonic() + timeout
        s = self.status(oid)
        while not pred(s):
            if time.monotonic() > end:
                self.fail_waiting(oid, s, timeout)
            time.sleep(0.02)
            s = self.status(oid)
        return s

    def rests_until(self, oid: str, s: Status) -> int | None:
        """When an unfinished instance next runs (see `rests_until`)."""
        return rests_until(s, lambda: self.steps(oid))

    def drive(self, oid: str, pred: Pred, timeout: float = TIMEOUT,
              max_advance_ms: int = 30 * DAY) -> Status:
        """Poll the status until `pred` holds; whenever the instance rests until a later
        time (a backoff, a sleep, a wait's deadline), move the clock there. Stop before
        a state you want to see: a deadline is crossed as readily as a backoff."""
        end = time.monotonic() + timeout
        moved = 0
        s = self.status(oid)
        while not pred(s):
            if time.monotonic() > end:
                self.fail_waiting(oid, s, timeout)
            wake = self.rests_until(oid, s)
            now = self.now()
            if wake is not None and wake > now:
                assert moved + wake - now <= max_advance_ms, (oid, s, moved)
                moved += wake - now
                self.advance(wake - now)
            else:
                time.sleep(0.02)
            s = self.status(oid)
        return s

    def fail_waiting(self, oid: str, s: Status, timeout: float) -> None:
        log = "\n".join(self.server.log[-40:])
        steps = json.dumps(self.steps(oid), indent=1, default=str)[:4000]
        pytest.fail(f"{oid}: not there after {timeout} s; last status {s}\nsteps {steps}\n"
                    f"server log:\n{log}", pytrace=False)


def eventually(cond: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    """Whether `cond` becomes true within `timeout` real seconds (polled)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def wait_until(cond: Callable[[], bool], timeout: float = TIMEOUT, what: str = "") -> None:
    if not eventually(cond, timeout):
        pytest.fail(f"not true after {timeout} s: {what or cond}", pytrace=False)


# -- what the example should come to ------------------------------------------------------

NOTIFY_DOWN = 'RuntimeError: ledger /notify answered 500: {"error":"the mail service is down"}'
# A trapped attempt, as the runner records it once the host has told it why the event was
# cut (lifecycle.last-trap-info): the example's pack raises SystemExit, which the guest
# reports before it exits.
CUT_1 = ("attempt 1 was cut: the guest raised SystemExit: the packing robot fell over "
         "(first attempt only)")
NOT_APPROVED = "not approved in time: the reservation was released"
_LEDGER_OP = {"reserve": "reserve", "pack": "attempt", "charge": "charge", "release": "release"}


def expected_output(oid: str, *, parcel: bool = False, by: str = "ann",
                    notify_fails: bool = False) -> dict[str, Any]:
    """flow.order's return value for an order that went through."""
    return {"order": oid, "reservation": f"res-{oid}",
            "parcel": f"parcel-{oid}" if parcel else None, "charge": f"ch-{oid}",
            "approved_by": by, "notified": not notify_fails,
            "notify_error": NOTIFY_DOWN if notify_fails else None}


def ledger_key(oid: str, run_id: str, step: dict[str, Any]) -> tuple[str, str] | None:
    """The ledger's (op, key) that counts the calls of a recorded step (None: a sleep or
    a wait). Keyed steps use run_id-position; notify is counted by order."""
    if step["kind"] != "step":
        return None
    if step["name"] == "notify":
        return ("notify", oid)
    return (_LEDGER_OP[step["name"]], f"{run_id}-{step['pos']}")


def summarize(steps: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(name, state, attempts) of each position: what a test compares."""
    return [(st["name"], st["state"], st["attempts"]) for st in steps]
