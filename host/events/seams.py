"""The seams between an event's parts, declared once: how a part runs an event
(`RunEvent`, events/lifecycle.py's EventRunner.run) and calls a guest's export
(`CallExport`, events/guest_call.py's GuestCall). Alarms and Requests are handed those
two objects themselves, typed by these protocols, so that a change of either's shape is
a type error in every part that uses it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..types import ActorRef
from .actor_slot import ActorSlot
from .event import Chain, Event

T = TypeVar("T")
Body = Callable[[ActorSlot, Event], T]


class RunEvent(Protocol):
    def __call__(self, ref: ActorRef, kind: str, chain: Chain, deadline: float,
                 body: Body[T], create: bool = True, wakes_holds: bool = True) -> T: ...


class CallExport(Protocol):
    def __call__(self, slot: ActorSlot, ev: Event, export: str,
                 args: tuple[Any, ...]) -> Any: ...
