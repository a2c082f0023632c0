"""The actor base class and `export`, which adapts it to the WIT `handler` export.

    class Greeter(Actor):
        def handle(self, req: Request) -> Response:
            return Response.text(f"hello, {req.sender.kind}")

    Handler = export(Greeter)

What happens to exceptions (the contract of `handler` in wit/world.wit):

- `on_init` / `on_alarm`: an `Exception` becomes the export's error result. `InitError`
  gives its message as is; anything else gives "on_init failed: Type: message" and its
  traceback is printed to stderr (the host's log). For `on_init` this means "not created:
  nothing kept, retry on the next event"; for `on_alarm` the host retries the alarm.
- `handle`: nothing is caught. An uncaught exception traps the instance: the host drops
  it and the caller gets 500. Catch what you expect and answer with a `Response`.
- A `BaseException` that is not an `Exception` (SystemExit, KeyboardInterrupt, your own)
  is never caught, in any hook: it traps.
- Before any of these traps, the exception is reported to the host
  (`lifecycle.report_exception`), which keeps it with the trap: the actor's next events
  read it in `lifecycle.last_trap_info()`, and operators see the Python exception.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import traceback
from collections.abc import Callable
from typing import Any

# Every interface module is imported here, not on first use: componentize-py snapshots
# the app after importing it, and a module first imported at run time is not found. So
# any app that calls export() can reach all of the SDK, even through a lazy import.
from wkguest import _bindings as _b
from wkguest import actors, alarm, http, lifecycle, metrics, overlap, sqlite, trace  # noqa: F401
from wkguest.codec import from_wire, to_wire
from wkguest.errors import InitError
from wkguest.types import PUBLIC, ActorRef, Request, Response, Sender

__all__ = ["Actor", "export"]


class _DroppingStream:
    """sys.stdout or sys.stderr, whose writes past the host's output cap fail (the host
    makes them fail, so that a flood costs the guest its CPU budget): here a failed write
    is dropped instead, so that `print` never raises in user code. What is dropped still
    costs the guest its handling, which its CPU budget pays for."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError:
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


if sys.platform == "wasi" and not isinstance(sys.stdout, _DroppingStream):  # in a guest
    sys.stdout = _DroppingStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = _DroppingStream(sys.stderr)  # type: ignore[assignment]

_BODY_TYPES = (bytes, bytearray, memoryview)  # a tuple made once: `a | b` is built per call


class Actor:
    """Base class of an actor: override only the hooks you need.

    One object is created per actor in a wasm instance, lazily, at its first event (not at
    build time, when host calls do not work), and it lives as long as the instance serves
    that actor: attributes are a cache, the database is the state. The host may drop an
    instance at any time. The constructor is called without arguments.

    Module globals live as long as the instance. Normally an instance serves one actor;
    a class served with `wkhost serve --reuse-instances` hands an instance to its next new
    actor, so there a global is shared by every actor the instance serves, one after
    another: keep per-actor state on this object or in the database.
    """

    def on_init(self) -> None:
        """Runs once, before this actor's first event: create tables here.

        Raise InitError (or any Exception) to refuse creation: nothing the hook committed
        is kept and the next event tries again.
        """

    def on_alarm(self) -> None:
        """The alarm is due. Any Exception makes the host retry it with backoff (unless
        this event set the alarm itself). Default: do nothing."""

    def handle(self, req: Request) -> Response:
        """Answer one request. An uncaught exception traps (the caller gets 500).
        Default: 404 "no handler"."""
        return Response.text("no handler", status=404)


def _sender(s: Any) -> Sender:
    if isinstance(s, _b.types.Sender_Actor):
        return Sender("actor", ActorRef(s.value.class_, s.value.id))
    if isinstance(s, _b.types.Sender_Operator):
        return Sender("operator")
    return PUBLIC  # Sender_Public; and if a new case ever appears, the least trusted one


def _request(req: Any, sender: Any) -> Request:
    return Request(
        method=req.method,
        path=req.path,
        query=req.query,
        headers=list(req.headers),
        body=from_wire(req.body),
        sender=_sender(sender),
    )


def _response(r: object, cls_name: str) -> Any:
    # Checked here so a mistake names the actor, not a frame deep in the generated glue.
    if not isinstance(r, Response):
        raise TypeError(f"{cls_name}.handle returned {type(r).__name__}, not a wkguest Response")
    if not isinstance(r.body, _BODY_TYPES):
        raise TypeError(f"{cls_name}: Response.body must be bytes, use Response.text/json")
    if not 100 <= r.status <= 599:
        raise ValueError(f"{cls_name}: Response.status {r.status} is not an HTTP status")
    return _b.types.Response(status=r.status, headers=list(r.headers), body=to_wire(r.body))


def _run_hook(hook: Callable[[], None], name: str) -> None:
    """Run on_init/on_alarm; turn an Exception into the export's error result. What the
    event counted (wkguest.metrics) goes to the host at its end, however it ends."""
    try:
        hook()
    except InitError as e:
        raise _b.Err(str(e) or f"{name} refused") from None
    except _b.Err as e:  # someone raised the bindings' own error type: pass its text on
        raise _b.Err(str(e.value)) from None
    except Exception as e:
        traceback.print_exc()  # stderr goes to the host's log: keep the whole story there
        raise _b.Err(f"{name} failed: {type(e).__name__}: {e}") from None
    except BaseException as e:  # it traps: reported first, kept with the trap
        lifecycle.report_exception(e)
        raise
    finally:
        metrics.flush()


def export(actor_cls: type[Actor]) -> type[Any]:
    """The class componentize-py calls for the `handler` export: `Handler = export(Cls)`.

    Raises TypeError if `actor_cls` is not an `Actor` subclass.
    """
    if not (isinstance(actor_cls, type) and issubclass(actor_cls, Actor)):
        raise TypeError(f"export() needs an Actor subclass, got {actor_cls!r}")
    handler = _handler_class(actor_cls)
    _freeze_module_state()
    return handler


def _handler_class(actor_cls: type[Actor]) -> type[Any]:
    # componentize-py may create the Handler object more than once (even at build time),
    # so the actor object lives here, per instance, not on the Handler. One object per
    # actor: a host that reuses instances (`wkhost serve --reuse-instances`) hands this
    # instance to a new actor only to create it, so on_init is that actor's first call,
    # and it starts a new object.
    holder: list[Actor] = []
    name = actor_cls.__name__

    def actor() -> Actor:
        if not holder:
            holder.append(actor_cls())
        return holder[0]

    class Handler:
        def on_init(self) -> None:
            holder.clear()
            _run_hook(lambda: actor().on_init(), "on_init")

        def on_alarm(self) -> None:
            _run_hook(lambda: actor().on_alarm(), "on_alarm")

        def handle(self, req: Any, sender: Any) -> Any:
            # An uncaught exception must trap (see module doc): it is only reported first.
            # A try costs nothing until something raises.
            try:
                return _response(actor().handle(_request(req, sender)), name)
            except BaseException as e:
                lifecycle.report_exception(e)
                raise
            finally:
                metrics.flush()  # what it counted (wkguest.metrics), however it ends

    Handler.__qualname__ = Handler.__name__ = f"Handler_{name}"
    # The actor object's holder, for a host that runs many actors in one interpreter
    # (wkhost's test kit on plain CPython): it keeps one object per actor and swaps it in.
    Handler.wk_actor_holder = holder  # type: ignore[attr-defined]
    return Handler


# The SDK's module state that is one instance's: code that may only read (readonly.py)
# and the event's metric samples (metrics.py). In a component each instance has its own;
# a host that runs many actors in one interpreter (the test kit) keeps a copy per actor.
INSTANCE_STATE = (("wkguest.readonly", "_what", lambda: None),
                  ("wkguest.metrics", "_pending", list))


def _freeze_module_state() -> None:
    # Every instance starts from the snapshot componentize-py takes after the app's import,
    # and its heap pages are copy-on-write. Without this, the cyclic GC's first collections
    # in an instance walk the objects of every module imported, writing to each, so an
    # event that allocates a few thousand objects (a journal of 5,000 positions decoded)
    # paid for copying most of the heap, and its json.loads was much slower
    # (docs/performance.md).
    # Frozen objects are never collected: they are the app's and the SDK's module-level
    # state, which lives as long as the instance anyway. Only in a guest: a test process
    # on plain CPython that calls export() keeps its collector as it was.
    if sys.platform == "wasi":
        gc.freeze()
