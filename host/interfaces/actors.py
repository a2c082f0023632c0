"""The `actors` interface: a synchronous call from one actor into another.

The call runs on the caller's thread, inside the caller's host call: the callee's event
takes the callee's lock (serialised with its other events) through the call graph, which
refuses re-entry and cross-thread cycles at once. The caller's deadline bounds it. The
depth of a chain is capped: each hop costs several Python frames inside a ctypes
callback, and a RecursionError there takes the whole process down.

A failed call answers "KIND: message" (errors.py's `call_kind`), and keeps its WIT
`call-error-kind` for `last-error`: the kind code branches on, told by the error's
class, never by its text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import tracing
from ..errors import DeadlineExceeded, HostError, NotThatProtocol, call_kind
from ..types import ActorRef, Sender
from .ports import ActorCalls, E
from .records import record

# WIT `call-error-kind`, by errors.py's `call_kind`; "error" is `other` but for the
# classes told apart below.
_KINDS = {"unknown": "unknown-class", "invalid": "invalid", "refused": "refused",
          "too-large": "too-large", "timeout": "deadline", "callee-trapped": "callee-trapped",
          "callee-budget": "callee-budget", "callee-lost": "callee-lost",
          "storage": "storage"}


def error_kind(e: HostError, cut_by_limit: Callable[[], bool]) -> str:
    """The WIT `call-error-kind` of the call's failure `e`. A deadline passed is the one
    the caller set itself when its event's `cut_by_limit` says so (events/requests.py asks
    the same, just before, to word it)."""
    if isinstance(e, NotThatProtocol):
        return "not-declared"
    if isinstance(e, DeadlineExceeded) and cut_by_limit():
        return "narrowed-deadline"
    return _KINDS.get(call_kind(e), "other")


def register(root: Any, guard: Any, host: ActorCalls[E]) -> None:
    max_depth = host.max_call_depth
    current, actor_ref, call_actor = host.current_event, host.actor_ref, host.call_from_actor

    def call(_store: Any, target: Any, req: Any) -> Any:
        caller = current()
        if len(caller.chain.stack) >= max_depth:
            why = f"refused: the call chain is {max_depth} deep, the most allowed"
            caller.call_error = ("refused", why)
            return why
        try:
            ref = actor_ref(getattr(target, "class"), target.id)
            sender = Sender.of_actor(caller.slot.ref)
            if tracing.tracer is not None:  # on its CLIENT span (host/tracing.py)
                tracing.annotate({"wkhost.callee.class": ref.cls, "wkhost.callee.id": ref.id,
                                  "http.request.method": req.method, "url.path": req.path})
            resp = call_actor(ref, req, sender, caller)
        except HostError as e:
            why = f"{call_kind(e)}: {e}"
            caller.call_error = (error_kind(e, caller.cut_by_limit), why)
            tracing.failed(why)
            return why
        if tracing.tracer is not None:
            tracing.annotate({"http.response.status_code": resp.status})
        return resp

    def last_error(_store: Any) -> Any:
        failed = current().call_error
        return None if failed is None else record(kind=failed[0], message=failed[1])

    with root.add_instance("wk:host/actors@0.1.0") as iface:
        iface.add_func("call", guard(call))
        iface.add_func("last-error", guard(last_error))


__all__ = ["register", "ActorRef", "error_kind"]
