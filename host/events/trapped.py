"""How a trapped call into the guest ended: the kind its instance read from wasmtime
(engine/instance.py's classify_trap), made precise by what the host knows of the event, and
the outcome the metrics count it under.

- An epoch trap while the deadline the guest set itself was its Store's is that
  deadline's (lifecycle.narrow-deadline), not the wall budget's.
- wasmtime refuses a memory past the cap by failing the guest's memory.grow, not by a
  trap: the host hears of it as the guest's MemoryError, which the guest reports
  (lifecycle.report-exception). A guest that reported nothing (built before it could, or
  too short of memory to report) is read by the last line it wrote, where Python's
  traceback names the exception it ended with: a guest that only printed the word
  earlier, or reported another exception, did not run out of memory.
- A guest's own trap after it reported the exception it raised says that exception
  (its type and message), not wasm's last instruction (`unreachable`): what a person
  can act on. A budget's cut keeps its own words, whatever the guest reported.
- A guest whose output flooded (its writes failed past the cap) trapped for that: what
  the trap itself says is only its last step. Its outcome stays the trap's own.
"""

from __future__ import annotations

from .. import metrics
from ..engine.instance import NARROWED
from ..traps import GuestException, TrapKind, TrapReason
from .actor_slot import GuestOutput

_OUTCOMES = {TrapKind.CPU: metrics.CPU_CUT, TrapKind.WALL: metrics.WALL_CUT,
             TrapKind.NARROWED_DEADLINE: metrics.WALL_CUT, TrapKind.MEMORY: metrics.MEMORY_CAP}
_OUT_OF_MEMORY = "MemoryError"
# What is read of the output for its last line: a traceback's last line is the
# exception's type and message, short for a MemoryError.
_TAIL_BYTES = 4096
# A reason is one line, for logs and answers: a long exception message is cut there.
_REASON_CHARS = 500


def kind_of(trap: TrapKind, narrowed: bool, reported: GuestException | None,
            output: GuestOutput) -> TrapKind:
    """The trap's kind, before any flood: `narrowed`, whether the deadline the guest set
    itself was its Store's; `reported`, the exception the guest reported, if any."""
    if trap is TrapKind.WALL and narrowed:
        return TrapKind.NARROWED_DEADLINE
    if trap in (TrapKind.GUEST, TrapKind.HOST) and _out_of_memory(reported, output):
        return TrapKind.MEMORY
    return trap


def _out_of_memory(reported: GuestException | None, output: GuestOutput) -> bool:
    if reported is not None:
        return reported.type_name == _OUT_OF_MEMORY
    ended_with = _last_line(output.chunks).partition(b":")[0].strip()
    return ended_with == _OUT_OF_MEMORY.encode()


def _last_line(chunks: list[bytes]) -> bytes:
    """The last line of what the guest wrote that is not blank (at most _TAIL_BYTES)."""
    tail: list[bytes] = []
    size = 0
    for chunk in reversed(chunks):
        tail.append(chunk)
        size += len(chunk)
        if size >= _TAIL_BYTES:
            break
    text = b"".join(reversed(tail))[-_TAIL_BYTES:].rstrip()
    return text.rpartition(b"\n")[2]


def raised(e: GuestException) -> str:
    """The one-line reason of a trap on the exception `e`: "the guest raised
    ZeroDivisionError: division by zero". A message of many lines is joined into one
    and cut at _REASON_CHARS (all of it stays in `last-trap-info`'s exception)."""
    said = f"{e.type_name}: {e.message}" if e.message else e.type_name
    line = " ".join(said.split())
    if len(line) > _REASON_CHARS:
        line = line[:_REASON_CHARS - 1] + "…"
    return f"the guest raised {line}"


def trap_outcome(kind: TrapKind) -> str:
    """How a trapped call ended, for the metrics' `outcome`."""
    return _OUTCOMES.get(kind, metrics.TRAP)


def ended(trap: TrapReason, narrowed: bool, reported: GuestException | None,
          output: GuestOutput, output_cap: int) -> tuple[TrapReason, str]:
    """Why the call ended, as the event keeps it, and its outcome for the metrics."""
    kind = kind_of(trap.kind, narrowed, reported, output)
    message = NARROWED if kind is TrapKind.NARROWED_DEADLINE else trap.message
    if kind is TrapKind.GUEST and reported is not None:
        message = raised(reported)
    outcome = trap_outcome(kind)
    if output.flooded:
        kind = TrapKind.OUTPUT_FLOOD
        message = (f"the guest's output flooded: it wrote past the {output_cap}-byte cap, "
                   f"where writes fail, and then trapped ({message})")
    return TrapReason(kind, message, reported), outcome
