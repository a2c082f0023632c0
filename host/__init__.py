"""wkhost: a durable-execution host for WebAssembly actors.

The public surface, for embedding a host in Python:

    from wkhost import Host, HostConfig, ActorRef, Request, Sender

`Host` and `HostConfig` are imported when first named, so that a module of the package
(the CLI's client commands, a crash point in a child process) does not pay for the
engine's imports it never uses. The package's layout is docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    ActorLimit,
    BadRequest,
    BudgetExceeded,
    CallRefused,
    DeadlineExceeded,
    Forbidden,
    GuestFailed,
    HostError,
    NotServedHere,
    NotThatProtocol,
    Overloaded,
    PeerLost,
    PeerUnavailable,
    StorageFailed,
    TooLarge,
    UnknownClass,
)
from .types import ActorRef, Request, Response, Sender

if TYPE_CHECKING:
    from .config import HostConfig
    from .core.host import Host

__version__ = "0.1.0"

__all__ = [
    "ActorLimit", "ActorRef", "BadRequest", "BudgetExceeded", "CallRefused",
    "DeadlineExceeded", "Forbidden", "GuestFailed", "Host", "HostConfig", "HostError",
    "NotServedHere", "NotThatProtocol", "Overloaded", "PeerLost", "PeerUnavailable",
    "Request", "Response", "Sender", "StorageFailed", "TooLarge", "UnknownClass",
]


def __getattr__(name: str) -> Any:
    if name == "Host":
        from .core.host import Host

        return Host
    if name == "HostConfig":
        from .config import HostConfig

        return HostConfig
    raise AttributeError(f"module 'wkhost' has no attribute {name!r}")
