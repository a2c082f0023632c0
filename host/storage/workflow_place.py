"""Where a workflow instance is, read from its database at an event's end: its run id,
its status and its journal's last position, for the event's trace span (host/tracing.py).

Read only with tracing on, and only by the host. The tables are the guest SDK's
(`_wk_wf`, `_wk_wf_step`: guest_sdk/wkguest/workflow/schema.py), which the host names
nowhere else: this is best effort. An actor without them (any other class), or with
tables of those names that are not the SDK's, has no place, and its event goes on as if
nothing were read. A host statement is denied whatever a view or trigger would do
(storage/policy.py's host_rule), so a guest's view of one of those names is refused
here, never run with the host's rights.

Why this, not a host function the runner would call (a WIT change, every component
rebuilt) nor a publish of each step (a host call, a meta write and an index update per
event, traces on or off): the runner already keeps both figures in its own tables, and
one read of them per traced event costs nothing when tracing is off.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw

from .actordb import ActorDb

_READ = ("SELECT run_id, state, (SELECT max(pos) FROM main._wk_wf_step)"
         " FROM main._wk_wf WHERE id = 1")


class WorkflowPlace(NamedTuple):
    run_id: str
    status: str
    step: int | None  # the journal's last position; None before its first


def workflow_place(db: ActorDb | None) -> WorkflowPlace | None:
    """The instance's place in `db` (None: not a workflow, or the db is gone)."""
    if db is None:
        return None
    try:
        rows = db.host_exec(_READ)
    except apsw.Error:  # no such table, a closed db, a view refused, text not UTF-8: no place
        return None
    if not rows:
        return None
    run_id, status, step = rows[0]
    return WorkflowPlace(str(run_id), str(status), step if isinstance(step, int) else None)
