"""Each step attempt's span (WIT `trace`), in the trace of the request that began its run.

A run's events are each the host's span of its own (a start request, an alarm, an event
delivered): the attempts of one run would be scattered over as many traces. So as a run
begins (a start, a continue-as-new) the runner keeps the current `traceparent` (the
start request's event span) in `_wk_wf_trace`, and each attempt's span is its child,
linked by the host to the event that ran it. A child workflow's start is a call from its
parent's step: its run is in its parent's trace, under that step's span.

    step NAME   wkhost.workflow.run_id, .position, .attempt (and .branch for a group's
                branch); at its end .outcome (returned, failed, timed-out) and
                wkhost.fuel; a failed attempt's exception, with its traceback

The table holds one row (the current run's). It is in the schema an instance is made with
(format version 8, docs/storage-format.md: an older runner ignores it), so that a traced
run's first write changes no schema (a change makes SQLite prepare every statement
again); an instance made before gets it from its first traced run. A run begun untraced
has no row of its own: its attempts' spans are children of their events' spans. With
tracing off none of this reads or writes anything, and each instance asks the host once
(Backend.tracing).
"""

from __future__ import annotations

from ..backend import Backend
from .schema import TRACE
from .store import Store

TABLE = "_wk_wf_trace"
_MAKE = TRACE  # a no-op where the instance's schema made it (version 8 on)
_PUT = f"INSERT OR REPLACE INTO {TABLE} (id, run_id, traceparent) VALUES (1, ?, ?)"
_GET = f"SELECT run_id, traceparent FROM {TABLE}"


class RunTrace:
    """A warm cache's (Store.trace): whether the host traces, and the current run's id and
    kept `traceparent` ("" if it began untraced), and whether that is written yet."""

    __slots__ = ("on", "run_id", "parent", "kept")

    def __init__(self, on: bool) -> None:
        self.on = on
        self.run_id: str | None = None  # None: not read yet
        self.parent = ""
        self.kept = True


def _of(store: Store) -> RunTrace:
    """The store's RunTrace, the host asked once per warm cache whether it traces."""
    t: RunTrace | None = store.trace
    if t is None:
        t = store.trace = RunTrace(store.db.tracing())
    return t


def run_began(db: Backend, store: Store, run_id: str, running_now: bool = False) -> None:
    """Run `run_id` began: keep its trace, if the host traces. `running_now`: it runs in
    this event (a waiting start's), so it is written only if it goes on in a later one
    (`goes_on`): most such runs end in the event they began in. The price: such a run
    that a trap cuts first has no row, and its later attempts' spans are children of
    their events' spans."""
    t = _of(store)
    parent = db.trace_current() if t.on else ""
    if parent:
        t.run_id, t.parent, t.kept = run_id, parent, not running_now
        if not running_now:
            db.exec_many([(_MAKE, ()), (_PUT, (run_id, parent))])


def goes_on(store: Store) -> None:
    """The run goes on in a later event (it waits, or runs again): its trace written, if
    `run_began` left it unwritten."""
    t: RunTrace | None = store.trace
    if t is None or t.kept or t.run_id is None:
        return
    store.db.exec_many([(_MAKE, ()), (_PUT, (t.run_id, t.parent))])
    t.kept = True


def begin(store: Store, run_id: str, name: str, pos: int, idx: int, attempt: int) -> int:
    """Attempt `attempt` of step (or branch) `name` at `pos` begins: its span's handle,
    0 if nothing is traced."""
    t = store.trace or _of(store)  # one attribute read an attempt, once asked
    if not t.on:
        return 0
    attributes = [("wkhost.workflow.run_id", run_id), ("wkhost.workflow.position", str(pos)),
                  ("wkhost.workflow.attempt", str(attempt))]
    if idx >= 0:
        attributes.append(("wkhost.workflow.branch", str(idx)))
    return store.db.span_begin(f"step {name}", _parent(store, t, run_id), attributes)


def end(db: Backend, span: int, outcome: str, fuel: int | None, error: str | None,
        traceback: str | None) -> None:
    """The attempt of `span` ended as `outcome`, having burnt `fuel`."""
    if not span:
        return
    attributes = [("wkhost.workflow.outcome", outcome)]
    if fuel is not None:
        attributes.append(("wkhost.fuel", str(fuel)))
    failed = None
    if error is not None:
        kind, sep, message = error.partition(": ")
        if not (sep and kind.replace(".", "").isidentifier()):
            kind, message = outcome, error  # a timeout's words, not an exception's
        failed = (kind, message, traceback or "")
    db.span_end(span, attributes, failed)


def _parent(store: Store, t: RunTrace, run_id: str) -> str:
    """The run's kept `traceparent` ("" if it began untraced), read once per warm cache."""
    if t.run_id is None:
        store.db.exec(_MAKE)
        row = store.db.query_row(_GET)
        t.run_id, t.parent = (str(row[0]), str(row[1])) if row else ("", "")
    return t.parent if t.run_id == run_id else ""
