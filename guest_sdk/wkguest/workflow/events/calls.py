"""`wf.emit(name, payload)`, `wf.query(name, handler)` and `wf.set_labels(labels)`: what a
workflow shows outside.

`emit` appends an event to the instance's durable stream (core/stream.py), which clients and
operators read from an offset (the `events` route). It is a position, like the helpers:
at a new position it writes the stream's row and the journal entry (kind M) in one plain
statement, made durable by the run's next commit; a recorded one replays as nothing at
all, so a replay never emits twice.

`query` registers a read-only handler; it takes no position and records nothing, so
adding one never changes a history. A run ignores it. A query (`Client.query`) replays
the function without running anything new (dry_replay.py) and calls the handler registered last
under that name with the query's argument, over the state the replay reached.

`set_labels` sets the labels the instance is listed by (core/labels.py): like `query`
it takes no position and records nothing; the labels are published with the instance's
next state write, and only if they changed.

Each is a function of the run's Cursor (core/cursor.py), called by `Run`'s method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.cursor import Cursor
from ..core.explain import reordered
from ..core.frontier import Frontier
from ..core.kinds import EMITTED
from ..core.labels import changes
from ..core.values import check_name, encode
from ..errors import UnsupportedValue, ValueTooLarge

EMIT = "emit"

Handler = Callable[[Any], Any]


class QueryFrontier(Frontier):
    """A dry replay's frontier (dry_replay.py), which keeps the queries registered."""

    queries: dict[str, Handler]


def emit(run: Cursor, name: str, payload: Any = None) -> None:
    """Append event `name` with `payload` (a recorded value's types) to the instance's
    stream, once: a replay of this position appends nothing.

    Raises CodeError (the instance parks, naming the call) for a bad name or a payload
    that cannot be recorded."""
    pos = run.enter()
    if run.recorded(pos):
        run.replay(pos, EMIT, name)
        return
    what = f"wf.emit({name!r})"
    text, tagged = _checked(run, name, payload, what)
    front, run_id = run.frontier, run.run_id
    run.new(pos, lambda: _append(front, run_id, pos, name, text, tagged))


def query(run: Cursor, name: str, handler: Handler) -> None:
    """Register `handler(arg)` as the answer to queries `name` (see the module's doc).
    It must only read the workflow's state: it may not call primitives.

    Raises CodeError for a bad name or a handler that is not callable."""
    run.at()
    try:
        check_name(name, "query")
        if not callable(handler):
            raise TypeError(f"the handler must be callable, not {handler!r}")
    except (TypeError, ValueError) as e:
        run.refuse(f"wf.query({name!r}): {e}")
    front = run.frontier
    if isinstance(front, QueryFrontier):  # only a dry replay keeps them
        front.queries[name] = handler


def set_labels(run: Cursor, given: Any) -> None:
    """`wf.set_labels(given)`: the run's labels, with `given` applied (core/labels.py).
    Raises CodeError (the instance parks, naming the call) for labels out of the host's
    bounds."""
    run.at()  # a primitive's rule: not inside a step's function
    what = "wf.set_labels"
    try:
        run.frontier.store.publish.set_labels(changes(given, what), what)
    except (TypeError, ValueError) as e:
        run.refuse(str(e))


def _checked(run: Cursor, name: str, payload: Any, what: str) -> tuple[str, bool]:
    try:
        check_name(name, "event")
        return encode(payload, run.frontier.limit, f"the payload of {what}")
    except (TypeError, ValueError, UnsupportedValue, ValueTooLarge) as e:
        run.refuse(f"{what}: {e}")


def _append(front: Frontier, run_id: str, pos: int, name: str, text: str,
            tagged: bool) -> None:
    p = front.pending
    if p is not None and p.pos == pos:  # the old code reached a step here
        raise reordered(pos, p.kind, p.name, EMIT, name)
    front.store.stream.append(name, text, tagged, run_id, pos, front.db.now())
    front.unsynced = True
    front.journal.append(EMITTED, name, "null", None)
