"""An operator's moves on an instance: terminate, pause and resume, rescue, restart (the
routes of the same names, protocol.py; their SQL: rewind.py). Each answers the status.

    terminate  unfinished → terminated at once: no compensation; its children not
               detached are terminated too (children/notices.py); retention begins
    pause      running, waiting or compensating → paused: it starts no new work and
               holds no alarm, but records the events (and child notices) sent to it
    resume     paused → the state it was paused in, its alarm to now: it goes on where
               it stopped (a backoff or a sleep still pending is waited out)
    rescue     parked, or failed → running again under the code now deployed, from its
               failing position: a failed instance's last entry, when it is a step's
               final failure, is removed so that step runs again with fresh attempts
               (the failed ones kept as earlier attempts);
               refused once compensations have run (a restart is the way then)
    restart    from the start: a new run id, the same input unless a new one is given,
               an empty journal; or from a position (by number, or by name and
               occurrence) keeping the run id and the recorded results before it, and
               the attempts of the positions it removes as earlier attempts

Every move that runs the instance again sets its alarm to now before its durable
transaction (the watchdog of the run that follows takes over from there), drops the
warm journal, and leaves the emitted stream and the instance's own tables as they are.
"""

from __future__ import annotations

from typing import Any

from ..core.instance import FINISHED, PARKED, PAUSED, StatusRow
from ..core.requests import BadRequest
from ..core.runner import Runner
from ..saga.cancelling import Marks
from ..saga.compensations import COMPENSATING
from .rewind import Rewind, Statement

PAUSABLE = ("running", "waiting", COMPENSATING)
TERMINATED_BY_OPERATOR = "terminated by an operator"


class OperatorMoves:
    """The operator's moves on this instance (see the module's doc), each given the
    instance's status row as the route read it; a move it refuses raises BadRequest."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.db = runner.db
        self.rewind = Rewind(runner.db)
        self.marks = Marks(runner.db)  # a cancel with compensation (saga/cancelling.py)

    def terminate(self, row: StatusRow, msg: dict[str, Any]) -> None:
        """A finished instance is left as it is (the answer says how it finished)."""
        reason = msg.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise BadRequest(400, "bad-request", "'reason' must be text")
        if row.state not in FINISHED:
            self.runner.terminate(f"{TERMINATED_BY_OPERATOR}: {reason}" if reason
                             else TERMINATED_BY_OPERATOR)

    def pause(self, row: StatusRow) -> None:
        if row.state == PAUSED:
            return
        if row.state not in PAUSABLE:
            raise BadRequest(409, "finished" if row.state in FINISHED else "not-pausable",
                             f"the instance is {row.state}: only a running, waiting or "
                             "compensating instance pauses"
                             + (" (rescue or cancel a parked one)" if row.state == PARKED
                                else ""))
        now = self.db.now()
        self.runner.forget()
        self.runner.store.publish.state(PAUSED, now)
        # Durably first, then the alarm cleared: a cut between leaves an alarm that finds
        # it paused, and clears itself (core/runner.py).
        self.rewind.commit(Rewind.pause(row.state, now))
        self.db.alarm_clear()

    def resume(self, row: StatusRow) -> None:
        if row.state != PAUSED:
            raise BadRequest(409, "finished" if row.state in FINISHED else "not-paused",
                             f"the instance is {row.state}, not paused: nothing to resume")
        was = self.rewind.paused()
        state = was[0] if was is not None else "running"
        self._again(Rewind.resume(state, self.db.now()), state)

    def rescue(self, row: StatusRow) -> None:
        if row.state == PARKED:
            # A cancel with compensation that parked goes on compensating (its mark).
            state = COMPENSATING if self.marks.mark() is not None else "running"
            return self._again(Rewind.again(state, self.db.now()), state)
        if row.state != "failed":
            raise BadRequest(409, "not-rescuable", f"the instance is {row.state}: rescue "
                             "takes a parked or a failed instance")
        done = self.rewind.compensations()
        if done:
            raise BadRequest(409, "compensated", f"the instance failed and its "
                             f"compensations have run ({done} recorded): running it again "
                             "from its failure would act on undone work. Restart it instead, "
                             "from the start or from a step (the restart route; `wkhost "
                             "workflow restart`)")
        now = self.db.now()
        last = self.rewind.last_failed()
        drop = [] if last is None else self.rewind.truncate(last, self.rewind.tables(),
                                                             kept=("rescue", now))
        self._again([*drop, *Rewind.again("running", now)], "running")

    def restart(self, row: StatusRow, msg: dict[str, Any],
                encode: Any) -> None:
        """`encode(value, what)` → (text, tagged): the protocol's, refusing a bad input."""
        at = self._position(msg)
        now = self.db.now()
        tables = self.rewind.tables()
        if at is None:
            stored = self.runner.store.input()
            text, tagged = (encode(msg["input"], "the input") if "input" in msg
                            else stored or ("null", False))
            self.db.alarm_set(now)  # first: the switch's COMMIT syncs it too
            self.runner.forget()
            self.runner.store.publish.state("running", now)
            first = [*self.rewind.truncate(0, tables), *Rewind.new_run(tables)]
            self.runner.store.chain.switch(self.runner.new_run_id(), text, tagged, now,
                                      self.runner.store.durable, first)
            return
        if "input" in msg:
            raise BadRequest(400, "bad-request", "'input' is for a restart from the start: "
                             "the positions a restart from a step keeps were made from the "
                             "instance's input")
        self._again([*self.rewind.truncate(at, tables, kept=("restart", now)),
                     *Rewind.again("running", now)], "running")

    def _position(self, msg: dict[str, Any]) -> int | None:
        """The restart's position: `from` (a number), or `step` and `occurrence` (the
        nth position of that name, from 1); None for the start."""
        pos, step, nth = msg.get("from"), msg.get("step"), msg.get("occurrence", 1)
        if pos is not None and step is not None:
            raise BadRequest(400, "bad-request", "give 'from' or 'step', not both")
        have = self.rewind.positions()
        if pos is not None:
            if not _int(pos) or not 0 <= pos <= len(have):
                raise BadRequest(400, "bad-request", f"'from' must be a position from 0 to "
                                 f"{len(have)} (the instance has {len(have)} positions), "
                                 f"not {pos!r}")
            return int(pos)
        if step is None:
            return None
        if not isinstance(step, str) or not step or not _int(nth) or nth < 1:
            raise BadRequest(400, "bad-request", "'step' must be a name and 'occurrence' "
                             "a number from 1")
        # A child's positions are shown without their reserved first character
        # (children/registry.py).
        found = [p for p, name in have if name in (step, "\x02" + step)]
        if len(found) < nth:
            raise BadRequest(404, "no-step", f"the instance has {len(found)} position(s) "
                             f"named {step!r}, not {nth}")
        return int(found[nth - 1])

    def _again(self, statements: list[Statement], state: str) -> None:
        """Run the instance again as `state`: its alarm to now, then the move durably."""
        now = self.db.now()
        self.db.alarm_set(now)
        self.runner.forget()
        self.runner.store.publish.state(state, now)
        self.rewind.commit(statements)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
