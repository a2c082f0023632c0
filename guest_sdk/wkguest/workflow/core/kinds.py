"""The kinds of journal entry: the one-letter `kind` of a `_wk_wf_step` row.

The letters are stored, and tools read them (docs/workflow-protocol.md, its appendix), so
they never change. A final entry ends its position and is never rewritten; a pending one
is only ever at the last position, until a final one replaces it.

    final                                                     result
    STEP_RETURNED          S  a step returned                 its value (plain JSON)
    STEP_RETURNED_TAGGED   T  a step returned                 its value (tagged JSON)
    STEP_FAILED            X  a step failed for good          [error, attempts]
    SLEEP_PASSED           Z  a sleep passed                  null
    WAIT_TOOK_EVENT        E  a wait took an event            its payload (plain)
    WAIT_TOOK_EVENT_TAGGED F  a wait took an event            its payload (tagged)
    WAIT_TIMED_OUT         O  a wait timed out                null
    NOW_TAKEN              N  wf.now() took the time          the time (int ms)
    RANDOM_TAKEN           R  wf.random() took a number       the float, in [0, 1)
    UUID_TAKEN             U  wf.uuid() took an id            the UUID's text
    PATCH_MARKER           V  wf.patched(id) answered True    true (the name is the id)
    EMITTED                M  wf.emit(name, payload)          null (the stream holds it)
    GROUP_SETTLED          G  a group (wf.all, all_settled,   [winner or null, each branch's
                              any) settled                    [kind, result] or null]
    UPDATE_APPLIED         A  an update was taken: its        [id, arg, tagged, displaced]
                              handler begins here
    UPDATE_DONE            D  the update's handler ended      [id, ok, value or error, tagged]

    pending
    STEP_RETRYING          p  a step, with its attempts so far (and maybe a backoff)
    SLEEPING               w  a sleep until wake_at
    WAITING                q  a wait until wake_at
    GROUP_OPEN             g  a group whose branches go on (their rows: _wk_wf_branch)

The helpers' entries (N, R, U) are named after their call ("now", "random", "uuid"); a
marker's name is its change id. Plain and tagged JSON: see values.py.
"""

from __future__ import annotations

from typing import NamedTuple

STEP_RETURNED = "S"
STEP_RETURNED_TAGGED = "T"
STEP_FAILED = "X"
SLEEP_PASSED = "Z"
WAIT_TOOK_EVENT = "E"
WAIT_TOOK_EVENT_TAGGED = "F"
WAIT_TIMED_OUT = "O"
NOW_TAKEN = "N"
RANDOM_TAKEN = "R"
UUID_TAKEN = "U"
PATCH_MARKER = "V"
EMITTED = "M"  # wf.emit(name, payload): the payload is in the stream (stream.py)
GROUP_SETTLED = "G"  # a group of branches settled (groups/calls.py)
UPDATE_APPLIED = "A"  # an update taken, its handler's positions follow (updates/taking.py)
UPDATE_DONE = "D"  # the update's handler ended: its outcome
STEP_RETRYING = "p"
SLEEPING = "w"
WAITING = "q"
GROUP_OPEN = "g"

# The primitives that record entries, as the steps route and the errors name them.
STEP = "step"
SLEEP = "sleep"
WAIT = "wait"
NOW = "now"
RANDOM = "random"
UUID = "uuid"
PATCHED = "patched"
GROUP = "group"
UPDATE = "update"


# A child's two positions are named NOTICE_PREFIX + "CLS/ID" (children/calls.py).
# Reserved: user names hold no control character (values.check_name), so no user event,
# step or wait can have a name that starts with U+0002.
NOTICE_PREFIX = "\x02child "
# The event an awaited workflow's notice is (children/awaited.py), and its wait's name.
WATCH_PREFIX = "\x02workflow "
# The name of an accepted update's row in _wk_wf_event (updates/inbox.py): its inbox, so
# that the load counts the waiting ones in a table every instance has.
UPDATE_EVENT = "\x02update"

class Kind(NamedTuple):
    call: str  # the primitive that records it: STEP, SLEEP, WAIT, NOW, ... PATCHED
    final: bool  # it ends its position
    state: str  # the position's state in the steps route
    # The tag of the store's statement that writes it (`TAGS`), if the store writes it.
    tag: str = ""


KINDS: dict[str, Kind] = {
    STEP_RETURNED: Kind(STEP, True, "done", "result"),
    STEP_RETURNED_TAGGED: Kind(STEP, True, "done", "result"),
    STEP_FAILED: Kind(STEP, True, "failed", "step-error"),
    SLEEP_PASSED: Kind(SLEEP, True, "done", "sleep-done"),
    WAIT_TOOK_EVENT: Kind(WAIT, True, "done", "take-event"),
    WAIT_TOOK_EVENT_TAGGED: Kind(WAIT, True, "done", "take-event"),
    WAIT_TIMED_OUT: Kind(WAIT, True, "timed-out", "timeout"),
    NOW_TAKEN: Kind(NOW, True, "done"),
    RANDOM_TAKEN: Kind(RANDOM, True, "done"),
    UUID_TAKEN: Kind(UUID, True, "done"),
    PATCH_MARKER: Kind(PATCHED, True, "done"),
    EMITTED: Kind("emit", True, "done"),
    GROUP_SETTLED: Kind(GROUP, True, "done", "group"),
    UPDATE_APPLIED: Kind(UPDATE, True, "taken", "update-taken"),
    UPDATE_DONE: Kind(UPDATE, True, "done", "update-done"),
    STEP_RETRYING: Kind(STEP, False, "retrying", "attempt"),
    SLEEPING: Kind(SLEEP, False, "sleeping", "sleep"),
    WAITING: Kind(WAIT, False, "waiting", "wait"),
    GROUP_OPEN: Kind(GROUP, False, "open"),
}

# Each statement of the store's that changes what the instance reports starts with a tag
# comment, so that a test host can kill itself at a named moment (wkhost's crash points);
# SQLite ignores it.
TAGS = {k: f"/*wk:{v.tag}*/" for k, v in KINDS.items() if v.tag}

FINAL_KINDS = "".join(k for k, v in KINDS.items() if v.final)  # "STXZEFONRUVMGAD"
PENDING_KINDS = "".join(k for k, v in KINDS.items() if not v.final)  # "pwqg"


def call_of(kind: str) -> str:
    """The primitive that records `kind`; an unknown kind as itself (it is only shown)."""
    known = KINDS.get(kind)
    return kind if known is None else known.call


def state_of(kind: str) -> str:
    """The steps route's state of a position of `kind`; an unknown kind as itself."""
    known = KINDS.get(kind)
    return kind if known is None else known.state


class Pending(NamedTuple):
    """The pending entry at the last position, as `Store.load` reads it (its row's
    columns, in this order)."""

    pos: int
    kind: str  # one of PENDING_KINDS
    name: str
    attempts: int  # a step's attempts counted so far (0 for a sleep or a wait)
    next_attempt_at: int | None  # a step in backoff: the earliest next attempt
    wake_at: int | None  # a sleep's wake time, a wait's deadline
    error: str | None  # a step's last attempt's error


# A pending attempt's cut, the `cut` column of a `p` row (_wk_wf_step, _wk_wf_branch;
# format version 6): NULL once its last counted attempt has ended; CUT_OPEN from its count
# until it ends, so that a run that finds it so knows it was cut; the host's kind of the
# cut (backend.LastTrap.kind) once a run noted why (cuts.py).
CUT_OPEN = "open"
# The errors a `p` row's attempt n leaves: counted, and cut with the host's reason; and
# the instance's error while a cut is unsettled (cuts.py).
COUNTED = "attempt {n} ended without a result (the instance trapped, or the event was cut)"
CUT_BECAUSE = "attempt {n} was cut: "
WAS_CUT = "its last event was cut: "


def per_attempt(template: str) -> str:
    """`template` (COUNTED, CUT_BECAUSE) as an SQL expression over a row's `attempts`."""
    return "'" + template.replace("'", "''").replace("{n}", "' || attempts || '") + "'"


def sql_list(kinds: str) -> str:
    """`kinds` as the body of an SQL `IN (...)`: "pwq" -> "'p', 'w', 'q'"."""
    return ", ".join(f"'{k}'" for k in kinds)


def shown(name: str | None) -> str | None:
    """A recorded name as the routes show it: `child orders/o-1` for a child's,
    `workflow orders/o-1` for an awaited workflow's."""
    if name is not None and name.startswith((NOTICE_PREFIX, WATCH_PREFIX)):
        return name[1:]
    return name
