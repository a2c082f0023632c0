"""The host as the WIT interfaces see it: interfaces/ports.py's HostPort, made of the
Host's own members, bound once (a host call reaches them with no layer between)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..clock import Clock
from ..config import HostConfig
from ..events import event
from ..events.event import Event
from ..fetch import FetchPolicy
from ..partition import Partition
from ..types import ActorRef, Sender


class InterfaceHost:
    """Satisfies `interfaces.ports.HostPort[Event]`."""

    def __init__(self, config: HostConfig, clock: Clock,
                 actor_ref: Callable[[str, str], ActorRef],
                 call_from_actor: Callable[[ActorRef, Any, Sender, Event], Any],
                 call_beside: Callable[[ActorRef, Any, Sender, Event, float], Any],
                 long_wait: Callable[[], AbstractContextManager[object]]) -> None:
        self.max_call_depth = config.max_call_depth
        self.fetch_policy: FetchPolicy = config.http
        self.current_event: Callable[[], Event] = event.current
        self.now_ms: Callable[[], int] = clock.now_ms
        self.fuel_per_event = config.fuel_per_event()
        self.holder = holder_of(config.partition)
        self.output_cap = config.max_guest_output_bytes
        self.actor_ref = actor_ref
        self.call_from_actor = call_from_actor
        self.call_beside = call_beside
        self.long_wait = long_wait


def holder_of(partition: Partition) -> str:
    """Who runs this host's actors, as `lifecycle.holder` tells them: this process, as
    `wkhost serve --processes N` numbers it (from 0, as its ready line and directory do)."""
    return f"process {partition.me} of {partition.count} (pid {os.getpid()})"
