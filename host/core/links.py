"""The host as the WIT interfaces see it: interfaces/ports.py's HostPort, made of the
Host's own members, bound once (a host call reaches them with no layer between)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..clock import Clock
from ..fetch import FetchPolicy
from ..types import ActorRef, Sender
from . import event
from .config import HostConfig
from .event import Event


class InterfaceHost:
    """Satisfies `interfaces.ports.HostPort[Event]`."""

    def __init__(self, config: HostConfig, clock: Clock,
                 actor_ref: Callable[[str, str], ActorRef],
                 call_from_actor: Callable[[ActorRef, Any, Sender, Event], Any],
                 long_wait: Callable[[], AbstractContextManager[object]]) -> None:
        self.max_call_depth = config.max_call_depth
        self.fetch_policy: FetchPolicy = config.http
        self.current_event: Callable[[], Event] = event.current
        self.now_ms: Callable[[], int] = clock.now_ms
        self.actor_ref = actor_ref
        self.call_from_actor = call_from_actor
        self.long_wait = long_wait
