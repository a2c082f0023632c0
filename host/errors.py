"""The host's public exceptions.

    HostError                      base of everything the host raises on purpose
    ├── BadRequest                 malformed input: a bad id, class or header (HTTP 400)
    ├── UnknownClass               no actor class of that name is served (404)
    ├── Forbidden                  an internal class asked by the public (403)
    ├── NotThatProtocol            a request in a protocol its class does not declare (404)
    ├── TooLarge                   a body or result over its cap (413)
    ├── frontdoor.SlowClient       a request body that did not arrive in time (408)
    ├── Overloaded                 backpressure: too many events waiting (503 + Retry-After)
    │   └── PeerUnavailable        the process that serves the actor is not answering
    ├── PeerLost                   that process went while it had the request (502)
    ├── NotServedHere              an actor of another process reached this one (500)
    ├── CallRefused                re-entry, a cross-thread cycle, the depth cap (409)
    ├── DeadlineExceeded           the event's time ran out while waiting (504)
    ├── StorageFailed              an actor's database cannot be opened: disk full... (507)
    │   └── ActorLimit             no new actor: the bound on actors or on disk room (507)
    └── GuestFailed                the guest trapped (500)
        └── BudgetExceeded         the CPU (fuel) or wall-clock budget cut the event (503)

Every message is one line, fit to show a user: the front door sends it as the reason.
"""

from __future__ import annotations


class HostError(Exception):
    """Base of every exception the host raises on purpose."""

    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message.splitlines()[0] if message else type(self).__name__)

    @property
    def reason(self) -> str:
        return str(self)


class BadRequest(HostError):
    http_status = 400


class UnknownClass(HostError):
    http_status = 404


class Forbidden(HostError):
    http_status = 403


class NotThatProtocol(HostError):
    """The request says it speaks a protocol (its `wk-protocol` header) that its class's
    component does not declare: nothing of the class runs."""

    http_status = 404


class TooLarge(HostError):
    http_status = 413


class Overloaded(HostError):
    http_status = 503
    retry_after_s = 1


class PeerUnavailable(Overloaded):
    """With `--processes N`: the process that serves the actor did not answer (it is
    restarting, or gone)."""


class PeerLost(HostError):
    """With `--processes N`: the process that serves the actor took the request and went
    (died, or stopped) before it answered. Unlike PeerUnavailable, the request may have
    run: not an invitation to retry blindly."""

    http_status = 502


class NotServedHere(HostError):
    """An event for an actor that another process serves: a routing bug, never run."""

    http_status = 500


class CallRefused(HostError):
    http_status = 409


class DeadlineExceeded(HostError):
    http_status = 504


class StorageFailed(HostError):
    http_status = 507


class ActorLimit(StorageFailed):
    pass


class GuestFailed(HostError):
    http_status = 500


class BudgetExceeded(GuestFailed):
    http_status = 503
