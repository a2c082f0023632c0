"""An open group's new work: its branches, moved on in one run.

An event runs guest code on one thread, so the branches take their turns, in the order
the code gives them, within each run that reaches the group: a step branch whose attempt
is due runs it (counted first, as a step's is, so a trap inside it counts), a sleep or a
wait whose time has come ends, a wait takes its event, a child's start is made and its
notice taken. A branch that cannot move yet (a step in backoff, a sleep, a wait, a
running child) gives the group a wake time, and the group waits for the earliest of
them: so the branches that wait do wait together, and a failing step backs off on its
own while the others go on. The event's budget cuts the turns as it cuts steps.

The group settles when its call says (calls.py): `all` once every branch has or one
branch has failed, `all_settled` once every branch has, `any` at the first branch that
has. Then its entry records every settled branch's outcome and, for `any` and for a
failed `all`, the branch that decided; the children of the branches left unsettled are
cancelled, unless the call says to leave them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..children import calls as _child
from ..core.attempt import attempt
from ..core.frontier import Frontier
from ..core.kinds import (
    FINAL_KINDS,
    GROUP,
    GROUP_OPEN,
    GROUP_SETTLED,
    SLEEP_PASSED,
    SLEEPING,
    STEP_FAILED,
    STEP_RETURNED,
    STEP_RETURNED_TAGGED,
    WAIT_TIMED_OUT,
    WAIT_TOOK_EVENT,
    WAIT_TOOK_EVENT_TAGGED,
    WAITING,
    Pending,
)
from ..core.moments import check_duration
from ..core.overlapping import Overlap, Overlapped
from ..core.values import decode, encode
from ..errors import Reordered, Suspend, UnsupportedValue, ValueTooLarge
from .branch_attempts import BranchSlot, Budget, Outcome
from .branches import ALL, ANY, CANCEL, Checked, Child, Sleep, Step, Wait
from .rows import BranchRows, Row

# A group that waits only for children has no time to wake at: their notices set its
# alarm. It still looks again this often, in case an alarm was lost with a crash.
IDLE_WAKE_MS = 86_400_000



class Turns:
    """One run's turns of the open group at `pos` (see the module's docstring): each
    branch, in the code's order, moved on as far as it can go now, over the group's
    branch rows (rows.py) and, for a step branch, the one attempt machine."""

    def __init__(self, front: Frontier, pos: int, sig: str, checked: list[Checked],
                 call: str, losers: str, key: Callable[[int], str],
                 guard: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        self.front = front
        self.db = front.db
        self.pos = pos
        self.sig = sig
        self.checked = checked
        self.call = call
        self.losers = losers
        self.key = key  # a branch's idempotency key, by index
        self.guard = guard  # the cursor's no-nesting rule
        self.rows = BranchRows(front.store, pos)
        self.wakes: list[int] = []
        self.running = False  # a step branch is due or in backoff: the state is running
        self.waiting_for: str | None = None
        self.started: set[int] = set()  # child branches whose start was made
        self.budget = Budget(front)  # once spent for one branch, spent for all
        self.overlap = Overlap(front)  # the async step branches' coroutines

    def run(self) -> list[Any]:
        """Move the group on. Returns its entry's record, [decider, outcomes], once it
        settles; raises Suspend until then."""
        front = self.front
        p = front.pending_at(self.pos, GROUP_OPEN, GROUP, self.sig)
        rows: dict[int, Row] = {}
        if p is None:
            self.rows.open(self.sig, self.db.now())
            front.pending = Pending(self.pos, GROUP_OPEN, self.sig, 0, None, None, None)
            front.unsynced = True
        else:
            rows = self.rows.load()
            self._check(rows)
        outcomes: list[Outcome | None] = [None] * len(self.checked)
        decider = None
        for i, c in enumerate(self.checked):
            row = rows.get(i)
            out = _recorded(row) if row and row.kind in FINAL_KINDS else self._advance(i, c, row)
            if isinstance(out, Overlapped):  # an async step branch's coroutine: driven below
                continue
            outcomes[i] = out
            if self._decides(out):
                decider = i
                break
        if decider is None:
            decider = self._overlapped(outcomes)
        self.overlap.abandon()
        if decider is None and (self.call == ANY or None in outcomes):
            self._suspend()
        return self._settle(decider, outcomes)

    def _decides(self, out: Outcome | None) -> bool:
        return out is not None and (self.call == ANY or (out[0] == STEP_FAILED
                                                         and self.call == ALL))

    def _overlapped(self, outcomes: list[Outcome | None]) -> int | None:
        """Drive the coroutines of the async step branches together (overlapping.py),
        each attempt ended as its coroutine ends: the branch that decides the group, if
        one does before all have ended."""
        while (ended := self.overlap.next_ended()) is not None:
            i, out = ended
            outcomes[i] = out
            if self._decides(out):
                return i
        return None

    def _check(self, rows: dict[int, Row]) -> None:
        for i, row in rows.items():
            name = self.checked[i].name if i < len(self.checked) else None
            if row.name != name:
                now = "no branch" if name is None else f"branch {name!r}"
                raise Reordered(
                    f"the code changed a group under a running instance: at position "
                    f"{self.pos}, {self.sig!r}, branch {i} was recorded as {row.name!r}, and "
                    f"the code now has {now} there. Running instances need the recorded "
                    "branches; serve changed code as a new class.")
            if row.kind == WAITING and isinstance(self.checked[i].branch, Child):
                self.started.add(i)

    def _suspend(self) -> None:
        now = self.db.now()
        wake = min(self.wakes) if self.wakes else now + IDLE_WAKE_MS
        self.rows.wake(wake, now)
        raise Suspend("running" if self.running else "waiting", wake, self.waiting_for)

    def _later(self, at: int | None, *, running: bool = False, waiting: str | None = None
               ) -> None:
        if at is not None:
            self.wakes.append(at)
        self.running = self.running or running
        if waiting is not None and self.waiting_for is None:
            self.waiting_for = waiting

    def _settle(self, decider: int | None, outcomes: list[Outcome | None]) -> list[Any]:
        record = [decider, outcomes]
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        front = self.front
        front.store.put_final(self.pos, GROUP_SETTLED, self.sig, text, self.db.now(),
                              durable=False)
        front.unsynced = True
        front.journal.append(GROUP_SETTLED, self.sig, text, record)
        front.pending = None
        if self.losers == CANCEL:
            for i in self.started:
                b = self.checked[i].branch
                if outcomes[i] is None and isinstance(b, Child) and not b.detach:
                    _child.cancel_child(self.db, b.cls, b.id)
        return record

    # -- each kind of branch -------------------------------------------------------

    def _advance(self, i: int, c: Checked, row: Row | None) -> Outcome | Overlapped | None:
        b = c.branch
        if isinstance(b, Step):
            f = b.f
            fn = (lambda: f(self.key(i))) if b.keyed else f
            return self._attempt(i, c, row, self.guard(fn))
        if isinstance(b, Sleep):
            return self._sleep(i, b, row)
        if isinstance(b, Wait):
            return self._wait(i, b, row)
        assert isinstance(b, Child)
        if row is not None and row.kind == WAITING:
            return self._child_notice(i, b)
        cb = b
        return self._attempt(
            i, c, row, lambda: _child.start_child(self.db, cb.cls, cb.id, cb.input, cb.detach),
            lambda _v, _n: self._child_started(i, c.name))

    def _attempt(self, i: int, c: Checked, row: Row | None, fn: Callable[[], Any],
                 done: Callable[[Any, int], Outcome | None] | None = None
                 ) -> Outcome | Overlapped | None:
        """An attempt of branch `i`'s step (or of its child's start: `done`), by the one
        attempt machine (core/attempt.py) over the branch's row."""
        assert c.retry is not None
        slot = BranchSlot(self.front, self.rows, row, i, c.name, self.key(i), self._later,
                          self.budget, self.overlap, done)
        out: Outcome | Overlapped | None = attempt(self.front, self.pos, slot, fn, c.retry)
        return out

    def _wake_at(self, i: int, kind: str, name: str, ms: object, what: str, row: Row | None,
                 now: int) -> int:
        """Branch `i`'s time to wake (a sleep's) or give up (a wait's deadline): recorded
        on its row, as `kind`, the first time it is reached, `ms` from `now`."""
        if row is not None and row.wake_at is not None:
            return row.wake_at
        at = now + check_duration(ms, what)
        self.rows.put(i, kind, name, now, wake_at=at)
        return at

    def _sleep(self, i: int, b: Sleep, row: Row | None) -> Outcome | None:
        now = self.db.now()
        wake = self._wake_at(i, SLEEPING, b.name, b.ms, f"sleep {b.name!r}", row, now)
        if now < wake:
            self._later(wake)
            return None
        self.rows.put(i, SLEEP_PASSED, b.name, now, result="null")
        return [SLEEP_PASSED, None]

    def _wait(self, i: int, b: Wait, row: Row | None) -> Outcome | None:
        now = self.db.now()
        deadline = self._wake_at(i, WAITING, b.name, b.timeout,
                                 f"the wait for {b.name!r}: its timeout", row, now)
        got = self.rows.oldest_event(b.name, deadline)
        if got is not None:
            seq, text, tagged = got
            kind = WAIT_TOOK_EVENT_TAGGED if tagged else WAIT_TOOK_EVENT
            self.rows.take_event(i, kind, b.name, seq, text, deadline, now)
            return [kind, json.loads(text)]
        if now >= deadline:
            self.rows.put(i, WAIT_TIMED_OUT, b.name, now, result="null")
            return [WAIT_TIMED_OUT, None]
        self._later(deadline, waiting=b.name)
        return None

    def _child_started(self, i: int, name: str) -> None:
        self.rows.put(i, WAITING, name, self.db.now())
        self.started.add(i)
        self._later(None, waiting=name)

    def _child_notice(self, i: int, b: Child) -> Outcome | None:
        self.started.add(i)
        got = self.rows.oldest_event(_child.notice_event(b.cls, b.id), None)
        if got is None:
            self._later(None, waiting=b.name)
            return None
        seq, text, tagged = got
        ok, value, error = _child.child_outcome(decode(text, tagged))
        if ok:
            try:
                vtext, vtagged = encode(value, self.front.limit, f"the output of {b.name}")
            except (UnsupportedValue, ValueTooLarge) as e:
                ok, error = False, str(e)
        if ok:
            kind = STEP_RETURNED_TAGGED if vtagged else STEP_RETURNED
        else:
            kind, vtext = STEP_FAILED, json.dumps([error or "failed", 1], ensure_ascii=False)
        self.rows.take_event(i, kind, b.name, seq, vtext, None, self.db.now())
        return [kind, json.loads(vtext)]


def _recorded(row: Row) -> Outcome:
    return [row.kind, None if row.result is None else json.loads(row.result)]
