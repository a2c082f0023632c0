"""The workflow example (examples/workflows) through `wkhost serve`, one case per test.

Real built components: `orders` (the workflow class, flow.order), `ledger` (what its steps
call, counting every call by key) and `app` (the public actor that starts and follows
orders with wkguest.workflow.Client). orders and ledger are served internal. Time is the
host's fake clock: backoffs, sleeps, timeouts and retention are crossed with
`advance(ms)`, never slept through.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from . import workflow_support
from .workflow_support import (
    CUT_1,
    DAY,
    HOUR,
    NOT_APPROVED,
    NOTIFY_DOWN,
    ORDER,
    RETENTION,
    SECOND,
    TIMEOUT,
    Shop,
    ShopFactory,
    Status,
    expected_output,
    finished,
    in_state,
    ledger_key,
    summarize,
    wait_until,
    waiting_for,
)

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory

CHARGE_BUSY = ('RuntimeError: ledger /charge answered 503: '
               '{"error":"payment service busy (attempt {n})"}')


def settle() -> None:
    """A short real pause, for checks that something does NOT happen: any event that is
    due runs in it (nothing here is due: the clock stands still)."""
    time.sleep(0.3)


def approved_order(shop: Shop, oid: str, **knobs: object) -> Status:
    """Start `oid` (no cool-off unless given), approve it once it waits, run it to its end."""
    shop.app_start(oid, **{"cool_off_ms": 0, **knobs})
    shop.drive(oid, waiting_for("approved"))
    assert shop.approve(oid) == (200, {"sent": "approved"})
    return shop.drive(oid, finished)


# -- 1. a step retried after errors ----------------------------------------------------------

def test_a_step_is_retried_after_errors_with_backoff(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, charge_failures=2)
    shop.drive("o1", waiting_for("approved"))
    shop.approve("o1")
    t = shop.now()
    wait_until(lambda: shop.has_step("o1", "charge", attempts=1,
                                      error=CHARGE_BUSY.replace("{n}", "1")),
               what="charge attempt 1 failed")
    charge = shop.step("o1", "charge")
    assert charge["state"] == "retrying"
    assert charge["error"] == CHARGE_BUSY.replace("{n}", "1")
    assert charge["next_attempt_at"] == t + 1 * SECOND  # the first backoff: 1 s
    s = shop.status("o1")
    assert (s["state"], s["wake_at"]) == ("running", t + 1 * SECOND)
    key = ("charge", f"{s['run_id']}-{charge['pos']}")

    # An event during the backoff does not run the step early.
    code, body = shop.wk("o1", "event", {"name": "poke", "payload": 1})
    assert (code, body) == (200, {"events_pending": 1})
    settle()
    assert shop.step("o1", "charge")["attempts"] == 1
    assert shop.calls()[key] == 1
    # Nor does the clock short of the backoff.
    shop.advance(1 * SECOND - 1)
    settle()
    assert shop.step("o1", "charge")["attempts"] == 1

    shop.advance(1)
    wait_until(lambda: shop.has_step("o1", "charge", attempts=2,
                                      error=CHARGE_BUSY.replace("{n}", "2")),
               what="charge attempt 2 failed")
    wait_until(lambda: shop.status("o1")["wake_at"] == t + 3 * SECOND, what="2nd backoff")
    charge = shop.step("o1", "charge")
    assert charge["error"] == CHARGE_BUSY.replace("{n}", "2")
    assert charge["next_attempt_at"] == t + 3 * SECOND  # doubled: 2 s after attempt 2

    shop.advance(2 * SECOND)
    s = shop.wait_for("o1", finished)
    assert s["state"] == "completed", s
    assert s["output"] == expected_output("o1")
    charge = shop.step("o1", "charge")
    assert (charge["state"], charge["attempts"], charge["error"]) == ("done", 3, None)
    assert shop.calls()[key] == 3  # the ledger was asked three times...
    assert shop.charges() == [[key[1], "o1", 1200]]  # ...and charged once


# -- 2. a trap inside a step ------------------------------------------------------------------

def test_a_trap_inside_a_step_counts_as_an_attempt(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, trap_in_pack=True)
    wait_until(lambda: len(shop.steps("o1")) == 2, what="pack reached")
    pack = shop.step("o1", "pack")
    assert (pack["state"], pack["attempts"], pack["error"]) == ("retrying", 1, CUT_1)
    wait_until(lambda: any("the packing robot fell over" in line for line in shop.server.log),
               what="the trap in the log")

    s = shop.drive("o1", waiting_for("approved"))
    pack = shop.step("o1", "pack")
    assert (pack["state"], pack["attempts"], pack["error"]) == ("done", 2, None)
    assert shop.calls()[("attempt", f"{s['run_id']}-{pack['pos']}")] == 2
    shop.approve("o1")
    s = shop.drive("o1", finished)
    assert s["state"] == "completed", s
    assert s["output"] == expected_output("o1", parcel=True)
    assert summarize(shop.steps("o1")) == [
        ("reserve", "done", 1), ("pack", "done", 2), ("cool-off", "done", 0),
        ("approved", "done", 0), ("charge", "done", 1), ("notify", "done", 1)]


def test_status_tells_when_a_trapped_step_runs_again(shop_factory: ShopFactory) -> None:
    """After a trap inside a step the instance rests until the step's next attempt (its
    alarm is set for then); the status's wake_at is documented as "when the alarm next
    runs it: ... a step's next attempt"."""
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, trap_in_pack=True)
    wait_until(lambda: len(shop.steps("o1")) == 2, what="pack reached")
    settle()
    pack = shop.step("o1", "pack")
    s = shop.status("o1")
    assert s["state"] == "running"
    assert s["wake_at"] == pack["next_attempt_at"], (s, pack)


# -- 3. a sleep -------------------------------------------------------------------------------

def test_a_sleep_waits_for_the_clock(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=HOUR)
    s = shop.wait_for("o1", in_state("waiting"))
    now = shop.now()
    assert (s["wake_at"], s["waiting_for"], s["positions"]) == (now + HOUR, [], 2)
    sleep = shop.step("o1", "cool-off")
    assert (sleep["kind"], sleep["state"], sleep["wake_at"]) == ("sleep", "sleeping", now + HOUR)

    shop.advance(HOUR - 1)
    settle()
    assert shop.status("o1")["waiting_for"] == []
    assert shop.step("o1", "cool-off")["state"] == "sleeping"

    shop.advance(1)
    s = shop.wait_for("o1", waiting_for("approved"))
    assert shop.step("o1", "cool-off")["state"] == "done"
    assert s["wake_at"] == now + HOUR + DAY  # now the wait's deadline (1 day by default)


# -- 4. events before and after their wait ----------------------------------------------------

def test_an_event_that_arrives_before_its_wait(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=HOUR)
    before = shop.wait_for("o1", in_state("waiting"))
    assert shop.approve("o1", by="early") == (200, {"sent": "approved"})
    settle()
    s = shop.status("o1")
    # Kept, and it does not end the sleep early.
    assert s["events_pending"] == 1
    assert (s["state"], s["wake_at"], s["positions"]) == ("waiting", before["wake_at"], 2)
    assert shop.calls().get(("charge", f"{s['run_id']}-3")) is None

    shop.advance(HOUR)
    s = shop.drive("o1", finished)
    assert s["state"] == "completed", s
    assert s["output"] == expected_output("o1", by="early")
    assert s["events_pending"] == 0
    wait = shop.step("o1", "approved")
    assert (wait["state"], wait["event_seq"]) == ("done", 1)
    assert wait["updated_at"] == before["wake_at"]  # taken as soon as the wait was reached


def test_an_event_that_arrives_after_its_wait_started(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0)
    s = shop.wait_for("o1", waiting_for("approved"))
    t = shop.now()
    assert (s["wake_at"], s["events_pending"]) == (t + DAY, 0)
    assert shop.step("o1", "approved")["state"] == "waiting"
    shop.advance(HOUR)
    assert shop.approve("o1", by="late") == (200, {"sent": "approved"})
    s = shop.drive("o1", finished)
    assert s["state"] == "completed", s
    assert s["output"] == expected_output("o1", by="late")
    wait = shop.step("o1", "approved")
    assert (wait["state"], wait["event_seq"], wait["updated_at"]) == ("done", 1, t + HOUR)


# -- 5. a wait's timeout ----------------------------------------------------------------------

def test_a_wait_times_out_and_the_order_is_released(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, approve_within_ms=5 * SECOND)
    s = shop.wait_for("o1", waiting_for("approved"))
    t = shop.now()
    assert s["wake_at"] == t + 5 * SECOND
    shop.advance(5 * SECOND - 1)
    settle()
    assert shop.status("o1")["state"] == "waiting"

    shop.advance(1)
    s = shop.wait_for("o1", finished)
    assert (s["state"], s["error"]) == ("failed", NOT_APPROVED), s
    assert "output" not in s
    assert summarize(shop.steps("o1")) == [
        ("reserve", "done", 1), ("cool-off", "done", 0), ("approved", "timed-out", 0),
        ("release", "done", 1)]
    release = shop.step("o1", "release")
    calls = shop.calls()
    assert calls[("release", f"{s['run_id']}-{release['pos']}")] == 1
    assert not [k for k in calls if k[0] in ("charge", "notify")]
    # A late approval is refused: the order is finished.
    code, body = shop.approve("o1")
    assert (code, body["kind"]) == (409, "finished"), body
    shop.advance(DAY)
    settle()
    assert shop.calls() == calls  # nothing ran again


# -- 6. a try_step error handled --------------------------------------------------------------

def test_a_try_step_error_is_handled(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    s = approved_order(shop, "o1", notify_fails=True)
    assert s["state"] == "completed", s
    assert s["output"] == expected_output("o1", notify_fails=True)
    assert s["output"]["notified"] is False
    notify = shop.step("o1", "notify")
    assert (notify["state"], notify["attempts"], notify["error"]) == ("failed", 2, NOTIFY_DOWN)
    assert shop.calls()[("notify", "o1")] == 2  # attempts=2 in flow.py, then handled


# -- 7. cancel --------------------------------------------------------------------------------

def test_cancel_while_waiting(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0)
    shop.wait_for("o1", waiting_for("approved"))
    t = shop.now()
    code, s = shop.app("POST", "/orders/o1/cancel")
    assert code == 200, s
    assert (s["state"], s["wake_at"], s["waiting_for"]) == ("cancelled", None, [])  # at once
    full = shop.status("o1")
    assert (full["state"], full["finished_at"], full["error"]) == ("cancelled", t, None)
    steps, calls = shop.steps("o1"), shop.calls()

    code, body = shop.approve("o1")
    assert (code, body["kind"]) == (409, "finished"), body
    assert shop.wk("o1", "event", {"name": "approved"})[1]["error"] == "finished"
    assert shop.app("POST", "/orders/o1/cancel")[1]["state"] == "cancelled"  # no change
    # Past the wait's deadline (1 day) and short of the retention: nothing runs.
    shop.advance(2 * DAY)
    settle()
    assert shop.status("o1")["state"] == "cancelled"
    assert shop.steps("o1") == steps
    assert shop.calls() == calls
    assert not [k for k in calls if k[0] in ("charge", "release", "notify")]


def test_cancel_during_a_backoff_then_retention(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=0, charge_failures=4)
    shop.drive("o1", waiting_for("approved"))
    shop.approve("o1")
    wait_until(lambda: shop.has_step("o1", "charge", attempts=1,
                                      error=CHARGE_BUSY.replace("{n}", "1")),
               what="charge attempt 1 failed")
    s = shop.wk("o1", "cancel")[1]
    assert (s["state"], s["wake_at"]) == ("cancelled", None), s
    steps, calls = shop.steps("o1"), shop.calls()
    shop.advance(HOUR)  # past every backoff of the charge
    settle()
    assert (shop.steps("o1"), shop.calls()) == (steps, calls)  # no more attempts

    # A cancelled instance is kept for the retention too, then deletes itself.
    shop.advance_to(s["finished_at"] + RETENTION)
    wait_until(lambda: shop.wk("o1", "status")[0] == 404, what="o1 deleted itself")
    assert shop.actor_ids() == []


def test_cancel_while_sleeping(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("o1", cool_off_ms=HOUR)
    shop.wait_for("o1", in_state("waiting"))
    assert shop.app("POST", "/orders/o1/cancel")[1]["state"] == "cancelled"
    shop.advance(2 * HOUR)
    settle()
    assert shop.step("o1", "cool-off")["state"] == "sleeping"  # never woke up
    assert summarize(shop.steps("o1")) == [("reserve", "done", 1), ("cool-off", "sleeping", 0)]


# -- 8. retention -----------------------------------------------------------------------------

def test_retention_deletes_a_finished_order_and_a_new_start_is_a_new_run(
        shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    s = approved_order(shop, "o1")
    assert s["state"] == "completed", s
    old_run, done_at = s["run_id"], s["finished_at"]
    old_reserve = ("reserve", f"{old_run}-0")
    assert shop.calls()[old_reserve] == 1

    shop.advance_to(done_at + RETENTION - 1)
    settle()
    assert shop.status("o1")["state"] == "completed"  # kept for 7 days
    assert "o1" in shop.actor_ids()
    # While it is kept, a start changes nothing (another input included).
    code, again = shop.wk("o1", "start", {"input": {"item": "other"}})
    assert code == 200 and again["created"] is False, again
    assert (again["run_id"], again["output"]) == (old_run, s["output"])

    shop.advance(2)
    wait_until(lambda: shop.wk("o1", "status")[0] == 404, what="o1 deleted itself")
    code, body = shop.wk("o1", "status")
    assert (code, body["error"]) == (404, "unknown")
    code, body = shop.app("GET", "/orders/o1")
    assert (code, body["kind"]) == (404, "unknown")
    assert "o1" not in shop.actor_ids()

    # The same id again: a new run, whose steps run again under new keys.
    assert shop.app_start("o1", cool_off_ms=0)["positions"] == 0
    s = shop.drive("o1", waiting_for("approved"))
    assert s["run_id"] != old_run
    shop.approve("o1", by="bob")
    s = shop.drive("o1", finished)
    assert s["output"] == expected_output("o1", by="bob")
    calls = shop.calls()
    assert calls[("reserve", f"{s['run_id']}-0")] == 1
    assert calls[old_reserve] == 1


# -- 11. unknown ids --------------------------------------------------------------------------

def test_unknown_ids_answer_unknown_and_leave_nothing(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    shop.app_start("real", cool_off_ms=0)  # so the class has an actor to list
    for method, path in [("GET", "/orders/ghost"), ("POST", "/orders/ghost/approve"),
                         ("POST", "/orders/ghost/cancel")]:
        code, body = shop.app(method, path, {} if method == "POST" else None)
        assert (code, body["kind"]) == (404, "unknown"), (path, body)
    for route, msg in [("status", {}), ("event", {"name": "approved"}), ("cancel", {}),
                       ("steps", {}), ("summary", {})]:
        code, body = shop.wk("ghost 2/x", route, msg)
        assert (code, body["error"]) == (404, "unknown"), (route, body)
    assert shop.actor_ids() == ["real"]
    assert shop.actor_ids("app") == ["web"]


def test_start_and_status_with_wait_ms_answer_when_it_ends(shop_factory: ShopFactory) -> None:
    """One request that answers when the instance has finished: the host holds the
    runner's answer and delivers the request again after each of the instance's events."""
    shop = shop_factory()
    oid = "waited"
    answers: dict[str, tuple[int, Any]] = {}

    def ask(name: str, route: str, msg: dict[str, Any]) -> threading.Thread:
        t = threading.Thread(target=lambda: answers.update({name: shop.wk(oid, route, msg)}),
                             daemon=True)
        t.start()
        return t

    order = {**ORDER, "cool_off_ms": 0}
    started = ask("start", "start", {"input": order, "wait_ms": 120_000})
    wait_until(lambda: shop.wk(oid, "status")[0] == 200, what="the instance exists")
    followed = ask("status", "status", {"wait_ms": 120_000})
    shop.drive(oid, waiting_for("approved"))
    assert "start" not in answers and "status" not in answers  # still held
    assert shop.approve(oid) == (200, {"sent": "approved"})
    shop.drive(oid, finished)
    for t in (started, followed):
        t.join(TIMEOUT)
    code, body = answers["start"]
    assert code == 200 and body["state"] == "completed" and body["created"] is True, body
    assert body["output"] == expected_output(oid)
    code, body = answers["status"]
    assert code == 200 and body["state"] == "completed" and "created" not in body, body
    assert body["output"] == expected_output(oid)
    # A finished instance answers at once, and a start that created nothing says so.
    code, body = shop.wk(oid, "start", {"input": order, "wait_ms": 120_000})
    assert code == 200 and body["state"] == "completed" and body["created"] is False


def test_a_bad_wait_ms_is_refused_and_creates_nothing(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    for bad in (-1, "soon", 1.5, True, 2**63):
        code, body = shop.wk("w-bad", "start", {"input": ORDER, "wait_ms": bad})
        assert (code, body["error"]) == (400, "bad-request"), (bad, body)
        assert "wait_ms" in body["message"]
    assert shop.wk("w-bad", "status")[0] == 404
    shop.wk("w-ok", "start", {"input": {**ORDER, "cool_off_ms": 0}})
    code, body = shop.wk("w-ok", "status", {"wait_ms": "soon"})
    assert (code, body["error"]) == (400, "bad-request")


# -- 12. the public is refused --------------------------------------------------------------

def test_the_runner_refuses_the_public(shop_factory: ShopFactory) -> None:
    # orders served public: the host lets the request through, the runner refuses it.
    shop = shop_factory(access={"ledger": "internal"})
    for route in ("start", "status", "event", "cancel", "steps"):
        code, body = shop.wk("x", route, {"input": {}}, operator=False)
        assert code == 403, (route, code, body)
        assert body["error"] == "forbidden", body
    assert shop.actor_ids() == []  # nothing was created, nothing left behind
    # An actor may (the app), and so may an operator.
    assert shop.app_start("y", cool_off_ms=0)["state"] == "running"
    assert shop.wk("y", "status")[0] == 200
    code, body = shop.wk("y", "cancel", operator=False)
    assert (code, body["error"]) == (403, "forbidden")
    assert shop.status("y")["state"] != "cancelled"


def test_the_host_refuses_the_public_for_an_internal_class(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    code, body = shop.wk("x", "start", {"input": {}}, operator=False)
    assert code == 403 and isinstance(body, str), body  # the host's plain-text refusal
    assert shop.actor_ids() == []


# -- always replay ----------------------------------------------------------------------------

MAIN = {"trap_in_pack": True, "charge_failures": 2, "cool_off_ms": HOUR, "notify_fails": True}
MAIN_STEPS = [("reserve", "done", 1), ("pack", "done", 2), ("cool-off", "done", 0),
              ("approved", "done", 0), ("charge", "done", 3), ("notify", "failed", 2)]


def main_scenario(shop: Shop, oid: str) -> None:
    """The demo's order: a trap, a sleep, an approval, a flaky charge, a failed notify."""
    shop.app_start(oid, **MAIN)
    shop.drive(oid, waiting_for("approved"))
    shop.approve(oid)
    s = shop.drive(oid, finished)
    assert s["state"] == "completed", s
    assert s["output"] == expected_output(oid, parcel=True, notify_fails=True)
    steps = shop.steps(oid)
    assert summarize(steps) == MAIN_STEPS
    calls = shop.calls()
    counts = {st["name"]: calls.get(ledger_key(oid, s["run_id"], st) or ("", ""))
              for st in steps if st["kind"] == "step"}
    assert counts == {"reserve": 1, "pack": 2, "charge": 3, "notify": 2}
    assert [c[1] for c in shop.charges()].count(oid) == 1


def test_the_main_order(shop_factory: ShopFactory) -> None:
    main_scenario(shop_factory(), "o1")


def test_orders_in_reused_instances(shop_factory: ShopFactory) -> None:
    """--reuse-instances with room for one live instance: the second and third orders
    are created in instances that served another order before. Every order still runs on
    its own journal to its own output."""
    reuse = [arg for cls in ("orders", "ledger", "app") for arg in ("--reuse-instances", cls)]
    shop = shop_factory(extra=[*reuse, "--max-live-instances", "1"])
    for oid in ("o1", "o2", "o3"):
        main_scenario(shop, oid)
    assert sorted(shop.actor_ids()) == ["o1", "o2", "o3"]
    status, _, body = shop.server.request("GET", "/_wk/health")
    # Always replayed, every instance goes after its event: there is nothing to reuse.
    fresh = "--always-fresh-instance" in shop.server.command()
    assert status == 200 and json.loads(body)["instances_reused"] >= (0 if fresh else 2), body


def test_the_main_order_always_replayed(shop_factory: ShopFactory) -> None:
    """A new instance for every event: every step is reached by replay from the journal."""
    main_scenario(shop_factory(extra=["--always-fresh-instance"]), "o1")
