"""Why a call into a guest trapped, as a value, without wasm: wasmtime's error mapped to a
kind once (engine/instance.py), the kind made precise by the event (events/trapped.py), the
exception the guest reports bounded, the kept reason encoded and read back, and a host
function's failure marking its thread (interfaces/linker.py's guard)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wasmtime import WasmtimeError
from wkhost import metrics
from wkhost.engine.instance import CPU_BUDGET, NARROWED, WALL_CLOCK, classify_trap, failure
from wkhost.errors import BudgetExceeded, GuestFailed, LeaseLost
from wkhost.events.actor_slot import ActorSlot, GuestOutput
from wkhost.events.trapped import ended, kind_of
from wkhost.interfaces.lifecycle import trap_info
from wkhost.interfaces.linker import guard
from wkhost.traps import (
    MAX_MESSAGE,
    MAX_TRACEBACK,
    MAX_TYPE_NAME,
    GuestException,
    TrapKind,
    TrapReason,
    take_host_failure,
)
from wkhost.types import ActorRef

UNREACHABLE = ("error while executing at wasm backtrace:\n    0: 0x1 - <unknown>!f\n\n"
               "Caused by:\n    wasm trap: wasm `unreachable` instruction executed")


def wasmtime_error(text: str) -> WasmtimeError:
    return WasmtimeError(text)


@pytest.mark.parametrize("text, kind, message", [
    ("error while executing\n\nCaused by:\n    wasm trap: all fuel consumed by WebAssembly",
     TrapKind.CPU, CPU_BUDGET),
    ("error while executing\n\nCaused by:\n    wasm trap: interrupt", TrapKind.WALL,
     WALL_CLOCK),
    (UNREACHABLE, TrapKind.GUEST,
     "guest trapped: wasm trap: wasm `unreachable` instruction executed"),
    ("Exited with i32 exit status 3", TrapKind.GUEST,
     "guest trapped: Exited with i32 exit status 3"),
    ("", TrapKind.GUEST, "guest trapped: unknown trap"),
])
def test_wasmtime_traps_map_to_kinds(text: str, kind: TrapKind, message: str) -> None:
    assert classify_trap(wasmtime_error(text)) == TrapReason(kind, message)


def test_a_host_function_failure_is_the_hosts_kind_with_the_same_message() -> None:
    text = "error while executing\n\nCaused by:\n    host function failed: OSError: disk"
    trap = classify_trap(wasmtime_error(text), host_failed=TrapKind.HOST)
    assert trap == TrapReason(TrapKind.HOST, "guest trapped: host function failed: "
                                             "OSError: disk")


def test_the_guard_marks_its_thread_when_a_host_function_fails() -> None:
    def fails(_store: object) -> None:
        raise OSError("disk")

    def works(_store: object) -> int:
        return 1

    take_host_failure()  # whatever an earlier test left on this thread
    assert guard(works, "sqlite")(None) == 1
    assert not take_host_failure()
    with pytest.raises(WasmtimeError, match="host function failed: OSError: disk"):
        guard(fails, "sqlite")(None)
    assert take_host_failure()
    assert not take_host_failure()  # taken once


@pytest.mark.parametrize("kind, raised", [
    (TrapKind.CPU, BudgetExceeded), (TrapKind.WALL, BudgetExceeded),
    (TrapKind.NARROWED_DEADLINE, BudgetExceeded), (TrapKind.GUEST, GuestFailed),
    (TrapKind.HOST, GuestFailed), (TrapKind.MEMORY, GuestFailed),
    (TrapKind.OUTPUT_FLOOD, GuestFailed),
])
def test_budgets_raise_budget_exceeded_and_the_rest_guest_failed(
        kind: TrapKind, raised: type[GuestFailed]) -> None:
    e = failure(TrapReason(kind, "why"))
    assert type(e) is raised and str(e) == "why"


def slot_that_wrote(*chunks: bytes) -> ActorSlot:
    slot = ActorSlot(ActorRef("c", "i"), Path("/nonexistent"))
    for chunk in chunks:
        slot.output.write(chunk, 1 << 20)
    return slot


OOM_OUTPUT = (b"Traceback (most recent call last):\n", b"MemoryError\n")
OOM = GuestException("MemoryError", "", "Traceback ...\nMemoryError\n")
RAISED = GuestException("ValueError", "bad", "Traceback ...\nValueError: bad\n")


def test_an_epoch_trap_under_a_narrowed_deadline_is_that_deadlines() -> None:
    quiet = slot_that_wrote().output
    assert kind_of(TrapKind.WALL, True, None, quiet) is TrapKind.NARROWED_DEADLINE
    assert kind_of(TrapKind.WALL, False, None, quiet) is TrapKind.WALL
    assert kind_of(TrapKind.CPU, True, None, quiet) is TrapKind.CPU  # fuel is fuel
    trap, outcome = ended(TrapReason(TrapKind.WALL, WALL_CLOCK), True, None, quiet, 100)
    assert trap == TrapReason(TrapKind.NARROWED_DEADLINE, NARROWED)
    assert outcome == metrics.WALL_CUT


def test_a_memory_error_makes_a_guest_trap_the_memory_caps() -> None:
    quiet, oom = slot_that_wrote().output, slot_that_wrote(*OOM_OUTPUT).output
    assert kind_of(TrapKind.GUEST, False, OOM, quiet) is TrapKind.MEMORY  # reported
    assert kind_of(TrapKind.GUEST, False, None, oom) is TrapKind.MEMORY  # an old build's
    assert kind_of(TrapKind.GUEST, False, RAISED, quiet) is TrapKind.GUEST
    # A budget's cut stays a cut, whatever the guest wrote or reported before it.
    assert kind_of(TrapKind.CPU, False, OOM, oom) is TrapKind.CPU
    trap, outcome = ended(TrapReason(TrapKind.GUEST, "guest trapped: x"), False, OOM, quiet,
                          100)
    assert trap == TrapReason(TrapKind.MEMORY, "guest trapped: x", OOM)
    assert outcome == metrics.MEMORY_CAP


def test_only_the_reported_exception_or_the_last_line_says_memory() -> None:
    """A guest that reported an exception ran out of memory only if it reported a
    MemoryError; one that reported none, only if the last line it wrote (a traceback's
    last) names one. The word written earlier, or in a message, is not the signal."""
    def said(*chunks: bytes) -> GuestOutput:
        return slot_that_wrote(*chunks).output

    printed = (b"MemoryError\n", b"Traceback (most recent call last):\n",
               b"ValueError: bad\n")
    assert kind_of(TrapKind.GUEST, False, None, said(*printed)) is TrapKind.GUEST
    assert kind_of(TrapKind.GUEST, False, RAISED, said(*OOM_OUTPUT)) is TrapKind.GUEST
    assert kind_of(TrapKind.GUEST, False, None,
                   said(b"ValueError: not a MemoryError\n")) is TrapKind.GUEST
    for oom in ((b"Traceback ...\nMemoryError: cannot allocate\n\n",),
                (b"Traceback ...\nMemory", b"Error\n"),  # a line in two writes
                (b"x" * 10_000, b"\nMemoryError\n")):
        assert kind_of(TrapKind.GUEST, False, None, said(*oom)) is TrapKind.MEMORY, oom


def test_a_flood_is_the_kind_and_the_trap_its_last_step() -> None:
    slot = slot_that_wrote()
    slot.output.past_cap = True
    trap, outcome = ended(TrapReason(TrapKind.CPU, CPU_BUDGET), False, RAISED, slot.output,
                          2000)
    assert trap.kind is TrapKind.OUTPUT_FLOOD and trap.exception == RAISED
    assert trap.message == ("the guest's output flooded: it wrote past the 2000-byte cap, "
                            f"where writes fail, and then trapped ({CPU_BUDGET})")
    assert outcome == metrics.CPU_CUT  # the metrics count the trap's own outcome


def test_what_the_guest_reports_is_bounded() -> None:
    e = GuestException.bounded("T" * 1000, "m" * 10_000, "head\n" + "t" * 100_000 + "\nend")
    assert len(e.type_name) == MAX_TYPE_NAME and e.type_name.endswith("…")
    assert len(e.message) == MAX_MESSAGE
    assert len(e.traceback) == MAX_TRACEBACK and e.traceback.endswith("\nend")
    small = GuestException.bounded("ValueError", "bad", "tb")
    assert small == GuestException("ValueError", "bad", "tb")


@pytest.mark.parametrize("trap", [
    TrapReason(TrapKind.GUEST, "guest trapped: x", RAISED),
    TrapReason(TrapKind.NARROWED_DEADLINE, NARROWED),
])
def test_a_kept_reason_reads_back_whole(trap: TrapReason) -> None:
    assert TrapReason.decoded(trap.message, trap.encoded_detail()) == trap


@pytest.mark.parametrize("detail", [None, "", "{", "[]", '{"kind": "new-kind"}',
                                    json.dumps({"kind": "cpu", "exception": [1]}), 42])
def test_a_reason_kept_without_its_detail_or_with_a_bad_one_is_unknown(
        detail: object) -> None:
    """A wkhost before the kinds kept the message alone (no `trap_detail` row)."""
    assert TrapReason.decoded("why", detail) == TrapReason(TrapKind.UNKNOWN, "why")


def test_the_kinds_are_the_wits_cases() -> None:
    wit = (Path(__file__).resolve().parents[2] / "wit" / "world.wit").read_text()
    body = wit.split("enum trap-kind {", 1)[1].split("}", 1)[0]
    cases = [line.strip().rstrip(",") for line in body.splitlines()
             if line.strip() and not line.strip().startswith("///")]
    assert cases == [k.value for k in TrapKind if k.seen_by_guest() is k]


def test_a_refused_cluster_write_is_the_hosts_lease_lost_and_the_guest_sees_host() -> None:
    """The guard marks a LeaseLost as LEASE_LOST, without a line (interfaces/linker.py);
    the trap keeps wasmtime's message; the guest and its database see `host`."""
    def refused(_store: object) -> None:
        raise LeaseLost("probe/x's write was refused by the store")

    take_host_failure()
    with pytest.raises(WasmtimeError, match="host function failed: LeaseLost"):
        guard(refused, "sqlite")(None)
    kind = take_host_failure()
    assert kind is TrapKind.LEASE_LOST
    text = "error while executing\n\nCaused by:\n    host function failed: LeaseLost: x"
    trap = classify_trap(wasmtime_error(text), kind)
    assert trap == TrapReason(TrapKind.LEASE_LOST,
                              "guest trapped: host function failed: LeaseLost: x")
    assert json.loads(trap.encoded_detail())["kind"] == "host"
    assert TrapReason.decoded(trap.message, trap.encoded_detail()).kind is TrapKind.HOST
    assert trap_info(trap).kind == "host"  # lifecycle.last-trap-info's answer


def test_a_guests_own_trap_on_a_reported_exception_says_the_exception() -> None:
    """Not wasm's `unreachable`: the type and message, on one line; a budget's cut and
    a trap with nothing reported keep their own words."""
    quiet = slot_that_wrote().output
    wasm = TrapReason(TrapKind.GUEST, "guest trapped: wasm `unreachable` instruction executed")
    trap, outcome = ended(wasm, False, RAISED, quiet, 100)
    assert trap == TrapReason(TrapKind.GUEST, "the guest raised ValueError: bad", RAISED)
    assert outcome == metrics.TRAP
    assert ended(wasm, False, None, quiet, 100)[0] == wasm
    cut = ended(TrapReason(TrapKind.CPU, CPU_BUDGET), False, RAISED, quiet, 100)[0]
    assert cut.message == CPU_BUDGET
    bare = GuestException("KeyboardInterrupt", "", "tb")
    assert ended(wasm, False, bare, quiet, 100)[0].message == "the guest raised KeyboardInterrupt"
    long = GuestException("ValueError", "line one\n  line two " + "x" * 2000, "tb")
    message = ended(wasm, False, long, quiet, 100)[0].message
    assert message.startswith("the guest raised ValueError: line one line two xxx")
    assert "\n" not in message and len(message) < 600 and message.endswith("…")
