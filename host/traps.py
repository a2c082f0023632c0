"""Why a call into a guest trapped: a kind, for code to act on, and a message, for people.

The kind is decided where the trap is (engine/instance.py reads wasmtime's, events/trapped.py
refines it with what the host knows of the event), carried as a value to where it is
kept (events/settle.py, the actor's `_wk_host_meta`), logged (by its message alone) and
answered (`lifecycle.last-trap` gives the message, `lifecycle.last-trap-info` the whole).
No code reads a kind back from a message.

The guest may report the exception it is about to trap on (`lifecycle.report-exception`):
its type, message and traceback, each bounded here, as the guest controls them.
"""

from __future__ import annotations

import enum
import json
import threading
from dataclasses import dataclass


class TrapKind(enum.Enum):
    """Each value but LEASE_LOST's is the case's name in the WIT enum
    `lifecycle.trap-kind`: LEASE_LOST is the host's, and the guest sees it as HOST."""

    CPU = "cpu"                              # the fuel of --cpu-budget-ms ran out
    WALL = "wall"                            # the epoch deadline of --wall-budget-ms
    NARROWED_DEADLINE = "narrowed-deadline"  # the epoch deadline the guest set itself
    MEMORY = "memory"                        # the guest's MemoryError at the memory cap
    OUTPUT_FLOOD = "output-flood"            # it wrote past the output cap, then trapped
    GUEST = "guest"                          # its own: an uncaught exception, exit, abort
    HOST = "host"                            # a host function under it failed
    UNKNOWN = "unknown"                      # kept by a wkhost that kept only the message
    # --cluster: a durable write the store refused (another node holds the shard). It is
    # the event's end, read once by events/lifecycle.py, and no trap of the guest's own.
    LEASE_LOST = "lease-lost"

    def seen_by_guest(self) -> TrapKind:
        """The kind as the guest reads it (`last-trap-info`) and its database keeps it."""
        return TrapKind.HOST if self is TrapKind.LEASE_LOST else self


# What the host keeps of a reported exception, in characters: the guest controls its
# size. A traceback keeps its end, where the frame that raised and the exception are.
MAX_TYPE_NAME = 256
MAX_MESSAGE = 4096
MAX_TRACEBACK = 16384


@dataclass(frozen=True)
class GuestException:
    """An exception the guest reported before it trapped (`lifecycle.report-exception`)."""

    type_name: str
    message: str
    traceback: str

    @staticmethod
    def bounded(type_name: str, message: str, traceback: str) -> GuestException:
        return GuestException(_head(type_name, MAX_TYPE_NAME), _head(message, MAX_MESSAGE),
                              _tail(traceback, MAX_TRACEBACK))


def _head(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[:cap - 1] + "…"


def _tail(text: str, cap: int) -> str:
    return text if len(text) <= cap else "…" + text[len(text) - cap + 1:]


@dataclass(frozen=True)
class TrapReason:
    """Why a call into the guest trapped: `message` is what the log, the caller and
    `last-trap` say, unchanged by the kind."""

    kind: TrapKind
    message: str
    exception: GuestException | None = None

    def encoded_detail(self) -> str:
        """The kind and the exception, as the actor's `trap_detail` row keeps them beside
        its `trap` row (the message, as a wkhost before the kinds kept it)."""
        e = self.exception
        return json.dumps({"kind": self.kind.seen_by_guest().value,
                           "exception": None if e is None else [e.type_name, e.message,
                                                                e.traceback]})

    @staticmethod
    def decoded(message: str, detail: object) -> TrapReason:
        """The reason kept as `message` and `detail` (`encoded_detail`'s, or None where
        a wkhost before the kinds kept the message alone): never raises."""
        try:
            d = json.loads(str(detail))
            kind = TrapKind(d["kind"])
            e = d["exception"]
            exc = None if e is None else GuestException.bounded(*map(str, e))
        except (ValueError, TypeError, KeyError):
            return TrapReason(TrapKind.UNKNOWN, message)
        return TrapReason(kind, message, exc)


# A host function that raised makes its guest trap (interfaces/linker.py's guard): it
# marks its thread, the thread of the call into the guest, which reads the mark as the
# trap arrives. Only a failure writes it and only a trap reads it.
_local = threading.local()


def host_function_failed(kind: TrapKind = TrapKind.HOST) -> None:
    """`kind`: the trap's, HOST, or LEASE_LOST for a durable write the store refused."""
    _local.failed = kind


def take_host_failure() -> TrapKind | None:
    """The kind of the trap a host function's failure on this thread made since the last
    take, if one failed."""
    failed: TrapKind | None = getattr(_local, "failed", None)
    _local.failed = None
    return failed
