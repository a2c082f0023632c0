"""`wf.emit(name, payload)` and `wf.query(name, handler)`: what a workflow shows outside.

`emit` appends an event to the instance's durable stream (core/stream.py), which clients and
operators read from an offset (the `events` route). It is a position, like the helpers:
at a new position it writes the stream's row and the journal entry (kind M) in one plain
statement, made durable by the run's next commit; a recorded one replays as nothing at
all, so a replay never emits twice.

`query` registers a read-only handler; it takes no position and records nothing, so
adding one never changes a history. A run ignores it. A query (`Client.query`) replays
the function without running anything new (dry_replay.py) and calls the handler registered last
under that name with the query's argument, over the state the replay reached.

`Emits` is a mixin of `Run`, as `Helpers` is: its methods use the replay core's state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from ..core.frontier import Frontier, reordered
from ..core.kinds import EMITTED
from ..core.values import check_name, encode
from ..errors import CodeError, UnsupportedValue, ValueTooLarge, WorkflowSignal

EMIT = "emit"

Handler = Callable[[Any], Any]


class _Core(Protocol):
    """The part of `Run` that emit and query use."""

    _kinds: list[str]
    _front: Frontier
    run_id: str
    stopped: WorkflowSignal | None

    def _enter(self) -> int: ...

    def _new(self, pos: int, work: Callable[[], Any]) -> Any: ...

    def _replay(self, pos: int, call: str, name: str) -> Any: ...


class Emits:
    __slots__ = ()

    def emit(self: _Core, name: str, payload: Any = None) -> None:
        """Append event `name` with `payload` (a recorded value's types) to the
        instance's stream, once: a replay of this position appends nothing.

        Raises CodeError (the instance parks, naming the call) for a bad name or a
        payload that cannot be recorded."""
        pos = self._enter()
        if pos < len(self._kinds):
            self._replay(pos, EMIT, name)
            return
        what = f"wf.emit({name!r})"
        text, tagged = _checked(self, name, payload, what)
        front, run_id = self._front, self.run_id
        self._new(pos, lambda: _append(front, run_id, pos, name, text, tagged))

    def query(self: _Core, name: str, handler: Handler) -> None:
        """Register `handler(arg)` as the answer to queries `name` (see the module's
        doc). It must only read the workflow's state: it may not call primitives.

        Raises CodeError for a bad name or a handler that is not callable."""
        self._enter()
        try:
            check_name(name, "query")
            if not callable(handler):
                raise TypeError(f"the handler must be callable, not {handler!r}")
        except (TypeError, ValueError) as e:
            _refuse(self, f"wf.query({name!r}): {e}")
        handlers: dict[str, Handler] | None = getattr(self._front, "queries", None)
        if handlers is not None:  # only a dry replay (dry_replay.py) keeps them
            handlers[name] = handler


def _checked(run: _Core, name: str, payload: Any, what: str) -> tuple[str, bool]:
    try:
        check_name(name, "event")
        return encode(payload, run._front.limit, f"the payload of {what}")
    except (TypeError, ValueError, UnsupportedValue, ValueTooLarge) as e:
        _refuse(run, f"{what}: {e}")


def _refuse(run: _Core, message: str) -> NoReturn:
    """Stop the run for a mistake in the code (it parks, naming the call)."""
    run.stopped = CodeError(message)
    raise run.stopped from None


def _append(front: Frontier, run_id: str, pos: int, name: str, text: str,
            tagged: bool) -> None:
    p = front.pending
    if p is not None and p.pos == pos:  # the old code reached a step here
        raise reordered(pos, p.kind, p.name, EMIT, name)
    front.store.stream.append(name, text, tagged, run_id, pos, front.db.now())
    front.unsynced = True
    front.journal.append(EMITTED, name, "null", None)
