"""The host's public exceptions.

    HostError                      base of everything the host raises on purpose
    ├── BadRequest                 malformed input: a bad id, class or header (HTTP 400)
    ├── UnknownClass               no actor class of that name is served (404)
    ├── Forbidden                  an internal class asked by the public (403)
    ├── NotThatProtocol            a request in a protocol its class does not declare (404)
    ├── TooLarge                   a body or result over its cap (413)
    ├── bodies.SlowClient          a request body that did not arrive in time (408)
    ├── Overloaded                 backpressure: too many events waiting (503 + Retry-After)
    │   └── PeerUnavailable        the process that serves the actor is not answering
    │       └── LeaseLost          --cluster: this node lost the actor's shard's lease
    │           └── NotOwnerNow    ... before the event ran: ask again
    ├── PeerLost                   that process went while it had the request (502)
    ├── NotServedHere              an actor of another process reached this one (500)
    ├── ClusterRefused             --cluster: this node may not join the cluster (500)
    ├── CallRefused                re-entry, a cross-thread cycle, the depth cap (409)
    ├── DeadlineExceeded           the event's time ran out while waiting (504)
    ├── StorageFailed              an actor's database cannot be opened: disk full... (507)
    │   └── ActorLimit             no new actor: the bound on actors or on disk room (507)
    └── GuestFailed                the guest trapped (500)
        └── BudgetExceeded         the CPU (fuel) or wall-clock budget cut the event (503)

Every message is one line, fit to show a user: the front door sends it as the reason.

Each class names itself twice, in class attributes, so that renaming a class changes
neither:
- `kind`, unique: what the processes of `--processes N` send each other for it
  (host/net/peers.py; `wire_kind`, and `error_class` back);
- `call_kind`: what an actor that called the failing one is answered, as "KIND: message"
  (the `actors` interface; `call_kind`): unknown, invalid, refused, callee-lost, timeout,
  callee-budget, callee-trapped, too-large, storage, or error for the others.
Every subclass must name its `kind` (a class without one is a TypeError when it is
defined); `call_kind` defaults to "error". A kind that is not one of this module's
classes (bodies.SlowClient, componentize.BuildError...) is read back as a plain
HostError.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar


class HostError(Exception):
    """Base of every exception the host raises on purpose."""

    http_status = 500
    kind: ClassVar[str] = "HostError"
    call_kind: ClassVar[str] = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message.splitlines()[0] if message else type(self).__name__)

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        # A subclass is another error: it names itself, never takes its parent's names.
        if "kind" not in cls.__dict__:
            raise TypeError(f"{cls.__qualname__} must name its wire kind: kind = \"...\"")
        if "call_kind" not in cls.__dict__:
            cls.call_kind = "error"

    @property
    def reason(self) -> str:
        return str(self)


class BadRequest(HostError):
    http_status = 400
    kind = "BadRequest"
    call_kind = "invalid"


class UnknownClass(HostError):
    http_status = 404
    kind = "UnknownClass"
    call_kind = "unknown"


class Forbidden(HostError):
    http_status = 403
    kind = "Forbidden"
    call_kind = "error"


class NotThatProtocol(HostError):
    """The request says it speaks a protocol (its `wk-protocol` header) that its class's
    component does not declare: nothing of the class runs."""

    http_status = 404
    kind = "NotThatProtocol"
    call_kind = "error"


class TooLarge(HostError):
    http_status = 413
    kind = "TooLarge"
    call_kind = "too-large"


class Overloaded(HostError):
    http_status = 503
    retry_after_s = 1
    kind = "Overloaded"
    call_kind = "refused"


class PeerUnavailable(Overloaded):
    """With `--processes N`: the process that serves the actor did not answer (it is
    restarting, or gone)."""

    kind = "PeerUnavailable"
    call_kind = "refused"


class PeerLost(HostError):
    """With `--processes N`: the process that serves the actor took the request and went
    (died, or stopped) before it answered. Unlike PeerUnavailable, the request may have
    run: not an invitation to retry blindly."""

    http_status = 502
    kind = "PeerLost"
    call_kind = "callee-lost"


class LeaseLost(PeerUnavailable):
    """With `--cluster`: this node no longer holds the lease of the actor's shard (it
    could not renew it in time, or another node took it and bumped its epoch), so the
    event's durable write was refused by PostgreSQL. Nothing of it was acknowledged;
    another node serves the actor shortly, and a retry reaches it."""

    kind = "LeaseLost"
    call_kind = "refused"


class NotOwnerNow(LeaseLost):
    """With `--cluster`: an event for an actor whose shard this node does not hold now,
    refused before anything of it ran, so that whoever passed it may ask again."""

    kind = "NotOwnerNow"
    call_kind = "refused"


class ClusterRefused(HostError):
    """With `--cluster`: this node may not join, e.g. it serves classes built otherwise
    than the cluster's, or the store's schema is newer than this wkhost."""

    http_status = 500
    kind = "ClusterRefused"
    call_kind = "error"


class NotServedHere(HostError):
    """An event for an actor that another process serves: a routing bug, never run."""

    http_status = 500
    kind = "NotServedHere"
    call_kind = "error"


class CallRefused(HostError):
    http_status = 409
    kind = "CallRefused"
    call_kind = "refused"


class DeadlineExceeded(HostError):
    http_status = 504
    kind = "DeadlineExceeded"
    call_kind = "timeout"


class StorageFailed(HostError):
    http_status = 507
    kind = "StorageFailed"
    call_kind = "storage"


class ActorLimit(StorageFailed):
    kind = "ActorLimit"
    call_kind = "error"


class GuestFailed(HostError):
    http_status = 500
    kind = "GuestFailed"
    call_kind = "callee-trapped"


class BudgetExceeded(GuestFailed):
    http_status = 503
    kind = "BudgetExceeded"
    call_kind = "callee-budget"


def wire_kind(e: BaseException) -> str:
    """The kind `e` is sent under between processes; for what is not a HostError, its
    class name."""
    return e.kind if isinstance(e, HostError) else type(e).__name__


def call_kind(e: BaseException) -> str:
    """The KIND of the "KIND: message" an actor's call answers its caller with."""
    return e.call_kind if isinstance(e, HostError) else "error"


def _classes(base: type[HostError]) -> Iterator[type[HostError]]:
    yield base
    for sub in base.__subclasses__():
        yield from _classes(sub)


# The classes of this module only: one defined elsewhere is read back as a HostError.
_BY_KIND = {c.kind: c for c in _classes(HostError) if c.__module__ == __name__}


def error_class(kind: str) -> type[HostError]:
    """The class another process sent `kind` for (`wire_kind`); HostError if none."""
    return _BY_KIND.get(kind, HostError)
