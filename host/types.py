"""Host-side values for what crosses the `handler` and `actors` interfaces."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Literal

SenderKind = Literal["public", "actor", "operator"]


@dataclass(frozen=True)
class ActorRef:
    cls: str
    id: str

    def __str__(self) -> str:
        return f"{self.cls}/{self.id}"


@dataclass(frozen=True)
class Sender:
    kind: SenderKind
    actor: ActorRef | None = None

    @staticmethod
    def public() -> Sender:
        return _PUBLIC

    @staticmethod
    def operator() -> Sender:
        return _OPERATOR

    @staticmethod
    def of_actor(ref: ActorRef) -> Sender:
        return Sender("actor", ref)


_PUBLIC = Sender("public")
_OPERATOR = Sender("operator")


@dataclass
class Request:
    method: str = "GET"
    path: str = "/"
    query: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


@dataclass
class Response:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    # Set when the guest asked the front door to hold this answer (host/events/holds.py): the
    # future that the actor's next event completes, and for how long to wait for it.
    # With it, what to send back as `wk-hold-state` in the request delivered again.
    hold: Future[None] | None = field(default=None, compare=False, repr=False)
    hold_ms: int = 0
    hold_state: str | None = None
