"""Why the instance's last event was cut, noted once, by the first event after it that
asks the host (`Runner.note_trap`: a run, or a status read): for a step's attempt and a
group's branches alike.

The host's reason (`Backend.last_trap_info`) goes on the instance's error ("its last
event was cut: <the host's message>", which its status shows until a run ends cleanly),
and on the attempt it cut, if one is pending at the last position: the row's `cut` takes
the reason's kind (kinds.py's CUT_OPEN is replaced) and its `error` the reason ("attempt n
was cut: <reason>"), and the attempt's history row is written with the reason, as 'cut',
or 'timed-out' if the host cut it at the deadline its step timeout narrowed. The attempt
machine (attempt.py) decides from the `cut` value alone.

The reason on the attempt is the host's message, or, where the guest reported the
exception it trapped on (kind "guest"), that exception: "the guest raised ValueError: bad
input" says more than wasm's `unreachable`. Its traceback goes with a step's attempt
(tracebacks.py), as a failed attempt's does.
"""

from __future__ import annotations

from ..backend import TRAP_GUEST, TRAP_NARROWED_DEADLINE, LastTrap
from . import tracebacks
from .attempt_history import CUT, STEP, TIMED_OUT, Attempts
from .kinds import CUT_BECAUSE, CUT_OPEN, GROUP_OPEN, STEP_RETRYING, WAS_CUT, per_attempt
from .store import Store

_LAST = "SELECT pos, kind FROM _wk_wf_step WHERE pos = (SELECT max(pos) FROM _wk_wf_step)"
_BECAUSE = per_attempt(CUT_BECAUSE)
# A step's pending attempt (whatever its cut: a cut outside it is noted on it too).
_STEP = (f"/*wk:step-cut*/ UPDATE _wk_wf_step SET error = {_BECAUSE} || ?1, cut = ?2"
         f" WHERE pos = ?3 AND kind = '{STEP_RETRYING}'")
_STEP_HISTORY = ("/*wk:attempt-cut*/ INSERT OR IGNORE INTO _wk_wf_attempt (pos, idx,"
                 f" attempt, started_at, outcome, error) SELECT pos, {STEP}, attempts,"
                 f" updated_at, ?2, ?1 FROM _wk_wf_step WHERE pos = ?3"
                 f" AND kind = '{STEP_RETRYING}'")
# An open group's branches whose attempt was open (counted, not ended).
_OPEN_BRANCH = f"pos = ?3 AND kind = '{STEP_RETRYING}' AND cut = '{CUT_OPEN}'"
_BRANCH_HISTORY = ("/*wk:attempt-cut*/ INSERT OR IGNORE INTO _wk_wf_attempt (pos, idx,"
                   " attempt, started_at, outcome, error) SELECT pos, idx, attempts,"
                   f" updated_at, ?2, ?1 FROM _wk_wf_branch WHERE {_OPEN_BRANCH}")
_BRANCH = (f"/*wk:branch-cut*/ UPDATE _wk_wf_branch SET error = {_BECAUSE} || ?1, cut = ?2"
           f" WHERE {_OPEN_BRANCH}")


def reason(trap: LastTrap) -> str:
    """What a cut attempt's error says after "attempt n was cut: ", on one line."""
    if trap.kind != TRAP_GUEST or trap.exception is None:
        return trap.message
    type_name, message = trap.exception[0], " ".join(trap.exception[1].split())
    return f"the guest raised {type_name}: {message}" if message else \
        f"the guest raised {type_name}"


def note(store: Store, trap: LastTrap) -> str:
    """Note `trap` on the instance and on the attempt it cut, if one is pending. Returns
    the instance's error."""
    db, error = store.db, WAS_CUT + trap.message
    db.exec("UPDATE _wk_wf SET error = ?", (error,))
    last = store.rows(_LAST)
    if not last or last[0][1] not in (STEP_RETRYING, GROUP_OPEN):
        return error
    pos, kind = last[0]
    Attempts(store).ready()
    why = reason(trap)
    outcome = TIMED_OUT if trap.kind == TRAP_NARROWED_DEADLINE else CUT
    if kind == STEP_RETRYING:
        db.exec(_STEP, (why, trap.kind, pos))
        db.exec(_STEP_HISTORY, (why, outcome, pos))
        if trap.exception is not None and trap.exception[2]:
            db.exec_many(tracebacks.cut_writes(pos, STEP_RETRYING, trap.exception[2]))
    else:  # the history first: the update closes what it selects
        db.exec(_BRANCH_HISTORY, (why, outcome, pos))
        db.exec(_BRANCH, (why, trap.kind, pos))
    return error
