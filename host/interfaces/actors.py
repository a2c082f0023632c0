"""The `actors` interface: a synchronous call from one actor into another.

The call runs on the caller's thread, inside the caller's host call: the callee's event
takes the callee's lock (serialised with its other events) through the call graph, which
refuses re-entry and cross-thread cycles at once. The caller's deadline bounds it. The
depth of a chain is capped: each hop costs several Python frames inside a ctypes
callback, and a RecursionError there takes the whole process down.
"""

from __future__ import annotations

from typing import Any

from ..errors import HostError, call_kind
from ..types import ActorRef, Sender
from .ports import ActorCalls, E


def register(root: Any, guard: Any, host: ActorCalls[E]) -> None:
    max_depth = host.max_call_depth
    current, actor_ref, call_actor = host.current_event, host.actor_ref, host.call_from_actor

    def call(_store: Any, target: Any, req: Any) -> Any:
        caller = current()
        if len(caller.chain.stack) >= max_depth:
            return f"refused: the call chain is {max_depth} deep, the most allowed"
        try:
            ref = actor_ref(getattr(target, "class"), target.id)
            sender = Sender.of_actor(caller.slot.ref)
            return call_actor(ref, req, sender, caller)
        except HostError as e:
            return f"{call_kind(e)}: {e}"

    with root.add_instance("wk:host/actors@0.1.0") as iface:
        iface.add_func("call", guard(call))


__all__ = ["register", "ActorRef"]
