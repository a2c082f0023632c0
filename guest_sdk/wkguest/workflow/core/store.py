"""The SQL of the instance and its journal, over a Backend (the features, continue-as-new,
the attempts' history and the emitted stream keep their own tables' SQL). The tables are
`_wk_wf*`, the SDK's, created by schema.py's statements:

    _wk_wf        one row: the instance (state, run_id, input, output, error, times)
    _wk_wf_step   one row per position: the journal (its kinds: kinds.py)
    _wk_wf_event  events received that no wait has taken yet (a wait takes them into its
                  journal entry)

Durability: what the instance promises the moment it answers (its creation, a sleep's
wake time, a wait's deadline, an event received, a timeout, a change of state) is
exec_durable. What a run records for itself (a step's result or final error, an event
taken, a helper's value) is a plain write that the run's last write syncs: a crash before
it loses the run's work together, which the next run does again. Bookkeeping a crash may
lose without breaking a promise (an attempt counted, a sleep seen as passed) uses exec.
"""

from __future__ import annotations

import json
from typing import Any

from ..backend import Backend, Param, atomically
from ..errors import StoreFault
from . import migration
from .carried import Carried
from .continuation import RunChain
from .instance import FINISHED_SQL, LOAD, PARKED, STATUS, STATUS_FROM, Loaded, StatusRow
from .kinds import CUT_OPEN, STEP_RETRYING, TAGS, WAIT_TOOK_EVENT, WAIT_TOOK_EVENT_TAGGED, Pending
from .publish import Publisher
from .schema import SCHEMA
from .stream import Stream


class Store:
    def __init__(self, backend: Backend) -> None:
        self.db = backend
        self.syncs = 0  # durable writes made: whether an event has synced what it wrote
        self.stream = Stream(backend)  # the emitted events (stream.py)
        self.chain = RunChain(backend)  # continue-as-new (continuation.py)
        self.publish = Publisher(backend)  # the state, for the host's index (publish.py)
        self.current = False  # its tables are known to be of this format (migration.py)
        self.has_attempts = False  # _wk_wf_attempt is known to be there (attempt_history.py)
        self.trace: Any = None  # spans.py's RunTrace, once the host was asked if it traces
        self.carried = Carried(backend)  # writes riding with the next one (carried.py)

    def durable(self, sql: str, params: tuple[Param, ...] = ()) -> int:
        """Run `sql` through exec_durable, counted in `syncs`: the rows it changed."""
        self.carried.flush()
        changes = self.db.exec_durable(sql, params)
        self.syncs += 1
        return changes

    def sync(self) -> None:
        """Make every write before it durable (one fsync), changing nothing."""
        self.durable("/*wk:sync*/ SELECT 1")

    def rows(self, sql: str, params: tuple[Param, ...] = ()) -> list[list[Any]]:
        self.carried.flush()
        packed = self.db.query_packed(sql, params)
        try:
            doc = json.loads(packed)
        except ValueError:
            raise StoreFault("query-packed returned malformed JSON") from None
        return list(doc[1:])

    def init_schema(self) -> None:
        # One script in one transaction: one crossing and one commit, not six of each.
        self.db.exec("/*wk:schema*/ BEGIN; " + "; ".join(SCHEMA) + "; COMMIT")
        self.stream.ready = self.chain.known = self.current = self.has_attempts = True

    def migrate(self) -> None:
        """Bring tables an older runner made to this format, once per Store: before an
        event's first read (`load`, `status`)."""
        if not self.current:
            migration.migrate(self.db, self.rows)
            self.current = True

    # -- reading -------------------------------------------------------------------

    def load(self, since: int, run_id: str) -> Loaded | None:
        row = self.db.query_row(LOAD, (since, run_id))
        if row is None:
            return None
        meta, keys, results = row
        try:
            r = json.loads(meta)
        except ValueError:
            raise StoreFault("the journal's load returned malformed JSON") from None
        if not self.current:
            # The load's last column tells whether the tables are of this format (the
            # step table has `cut`): a fresh instance's first event asks no more.
            if not r[13]:
                self.migrate()
                return self.load(since, run_id)
            self.current = True
        start = since if r[1] == run_id else 0
        return Loaded(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]),
                      start, r[10], r[11] or "", keys or "", results or "[]",
                      None if r[12] is None else Pending(*r[12]), bool(r[14]), r[15])

    @staticmethod
    def just_created(run_id: str, text: str, tagged: bool) -> Loaded:
        """What `load(0, "")` reads right after `create` made the instance (a new actor:
        no steps, no events): for the first run in the creating event, without the query."""
        return Loaded("running", run_id, 0, None, None, None, None, None, text, tagged, 0, 0,
                      "", "", "[]", None)

    def status(self) -> StatusRow | None:
        self.migrate()
        got = self.chain.status_rows(self.rows, STATUS, STATUS_FROM)
        if not got:
            return None
        r = got[0]
        return StatusRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7], r[8], r[9],
                         r[10], r[11], r[12], r[13] or 1, r[14])

    def continue_as_new(self, run_id: str, text: str, tagged: bool, now: int) -> None:
        """Begin run `run_id` with input `text`, in one durable transaction (continuation.py)."""
        self.chain.switch(run_id, text, tagged, now, self.durable)

    def input(self) -> tuple[str, bool] | None:
        """The instance's input as stored: (JSON text, tagged)."""
        got = self.rows("SELECT input, input_tagged FROM _wk_wf")
        if not got:
            return None
        text, tagged = got[0]
        return ("null" if text is None else str(text)), bool(tagged)

    def events_pending(self) -> int:
        return int(self.rows("SELECT count(*) FROM _wk_wf_event")[0][0])

    def oldest_event(self, name: str, until: int) -> tuple[int, str, bool] | None:
        """The oldest event `name` received at or before `until` (a wait's deadline)."""
        got = self.rows(
            "SELECT seq, payload, tagged FROM _wk_wf_event WHERE name = ? AND received_at <= ?"
            " ORDER BY seq LIMIT 1",
            (name, until),
        )
        return (got[0][0], got[0][1], bool(got[0][2])) if got else None

    # -- the instance --------------------------------------------------------------

    def create(self, run_id: str, text: str, tagged: bool, now: int,
               watchdog: int | None = None) -> bool:
        """Insert the instance, durably. `watchdog`: with its first run begun, as
        begin_run(1, watchdog, now) would leave it, and not synced by itself: that run's
        own durable write syncs it (Runner.create_and_run)."""
        write = self.durable if watchdog is None else self.db.exec
        self.publish.state("running", now)
        return write(
            "/*wk:create*/ INSERT OR IGNORE INTO _wk_wf (id, state, run_id, input, input_tagged,"
            " bad_runs, retry_at, wake_at, created_at, updated_at)"
            " VALUES (1, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, text, int(tagged), 0 if watchdog is None else 1, watchdog, watchdog,
             now, now),
        ) > 0

    def begin_run(self, bad_runs: int, retry_at: int, now: int) -> None:
        # wake_at follows the watchdog alarm: a run cut before end_run (a trap, a kill)
        # leaves the status saying when the instance runs next, not a stale time.
        self.carried.write(
            "/*wk:begin-run*/ UPDATE _wk_wf SET bad_runs = ?, retry_at = ?, wake_at = ?,"
            " updated_at = ?",
            (bad_runs, retry_at, retry_at, now),
        )

    def clear_bad_runs(self, carried: bool = False) -> None:
        """The run got into a step; `carried`: with the next write (the step's count)."""
        sql = "UPDATE _wk_wf SET bad_runs = 0, retry_at = NULL"
        if carried:
            self.carried.add(sql, ())
        else:
            self.carried.write(sql)

    def undo_bad_run(self) -> None:
        self.carried.write("UPDATE _wk_wf SET bad_runs = max(bad_runs - 1, 0), retry_at = NULL")

    def note_bad_run(self, error: str, now: int, durable: bool = False) -> None:
        # Never over a parked instance's reason (a storage fault in the event that found
        # it parked is noted here too).
        write = self.durable if durable else self.carried.write
        write(f"UPDATE _wk_wf SET error = ?, updated_at = ? WHERE state != '{PARKED}'",
              (error, now))

    def end_run(self, state: str, wake_at: int | None, waiting_for: str | None, now: int,
                durable: bool) -> None:
        write = self.durable if durable else self.carried.write
        self.publish.state(state, now)
        write(
            "/*wk:end-run*/ UPDATE _wk_wf SET state = ?, wake_at = ?, waiting_for = ?,"
            " bad_runs = 0,"
            " retry_at = NULL, error = NULL, updated_at = ?",
            (state, wake_at, waiting_for, now),
        )

    def finish(self, state: str, output: str | None, tagged: bool, error: str | None,
               now: int) -> bool:
        self.publish.state(state, now)
        return self.durable(
            "/*wk:finish*/ UPDATE _wk_wf SET state = ?, output = ?, output_tagged = ?,"
            " error = ?,"
            " wake_at = NULL, waiting_for = NULL, bad_runs = 0, retry_at = NULL,"
            " updated_at = ?, finished_at = ?"
            f" WHERE state NOT IN ({FINISHED_SQL})",
            (state, output, int(tagged), error, now, now),
        ) > 0

    def park(self, reason: str, now: int) -> bool:
        """Park the unfinished instance, durably, with `reason` as its error: no wake time,
        no bad-run count. Its journal stays as recorded. False if it had finished."""
        self.publish.state(PARKED, now)
        return self.durable(
            f"/*wk:park*/ UPDATE _wk_wf SET state = '{PARKED}', error = ?, wake_at = NULL,"
            " waiting_for = NULL, bad_runs = 0, retry_at = NULL, updated_at = ?"
            f" WHERE state NOT IN ({FINISHED_SQL})",
            (reason, now),
        ) > 0

    def add_event(self, name: str, text: str, tagged: bool, now: int) -> None:
        self.durable(
            "/*wk:event*/ INSERT INTO _wk_wf_event (name, payload, tagged, received_at)"
            " VALUES (?, ?, ?, ?)",
            (name, text, int(tagged), now),
        )

    # -- the journal ---------------------------------------------------------------

    def count_attempt(self, pos: int, name: str, attempts: int, error: str,
                      next_attempt_at: int, now: int) -> None:
        """Attempt `attempts` counted before it runs: open (kinds.CUT_OPEN) until it ends."""
        self.carried.write(
            "/*wk:attempt*/ INSERT INTO _wk_wf_step (pos, kind, name, attempts, error,"
            " next_attempt_at,"
            f" updated_at, cut) VALUES (?, '{STEP_RETRYING}', ?, ?, ?, ?, ?, '{CUT_OPEN}')"
            " ON CONFLICT (pos) DO UPDATE SET"
            " attempts = excluded.attempts, error = excluded.error,"
            " next_attempt_at = excluded.next_attempt_at, updated_at = excluded.updated_at,"
            " cut = excluded.cut",
            (pos, name, attempts, error, next_attempt_at, now),
        )  # the trigger _wk_wf_attempt_wake copies next_attempt_at to the status

    def retry_later(self, pos: int, error: str, next_attempt_at: int, now: int) -> None:
        self.carried.write(
            "UPDATE _wk_wf_step SET error = ?, next_attempt_at = ?, updated_at = ?, cut = NULL"
            " WHERE pos = ?",
            (error, next_attempt_at, now, pos),
        )

    def attempt_at(self, pos: int) -> tuple[str | None, str | None]:
        """The pending step at `pos`: its last attempt's cut (kinds.CUT_OPEN, a kind, or
        None: it ended) and error, as a run that noted a cut left them (cuts.py)."""
        got = self.rows("SELECT cut, error FROM _wk_wf_step WHERE pos = ?", (pos,))
        return (got[0][0], got[0][1]) if got else (None, None)

    def put_pending(self, pos: int, kind: str, name: str, wake_at: int, now: int) -> None:
        self.durable(
            TAGS[kind] + " INSERT INTO _wk_wf_step (pos, kind, name, wake_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?)",
            (pos, kind, name, wake_at, now),
        )

    def put_final(self, pos: int, kind: str, name: str, result: str, now: int, *,
                  error: str | None = None, wake_at: int | None = None,
                  durable: bool = True) -> None:
        write = self.durable if durable else self.carried.write
        write(TAGS[kind] + _PUT_FINAL, (pos, kind, name, result, error, wake_at, None,
                                               now))

    def take_event(self, pos: int, name: str, wake_at: int, seq: int, payload: str,
                   tagged: bool, now: int) -> None:
        """Move event `seq` into the journal at `pos`, atomically. Not synced by itself:
        the event was durable when it came, and the run's last write syncs the take with
        the rest of the run (`Frontier.unsynced`); a crash before it leaves the event
        untaken, and the next run takes it again."""
        kind = WAIT_TOOK_EVENT_TAGGED if tagged else WAIT_TOOK_EVENT
        def take() -> None:
            self.db.exec("/*wk:take-event*/" + _PUT_FINAL,
                         (pos, kind, name, payload, None, wake_at, seq, now))
            if self.db.exec("DELETE FROM _wk_wf_event WHERE seq = ?", (seq,)) != 1:
                raise StoreFault(f"event {seq} vanished while being taken")

        atomically(self.db, take, commit="/*wk:take-commit*/ COMMIT", durable=False)


_PUT_FINAL = (
    "INSERT INTO _wk_wf_step (pos, kind, name, result, error, wake_at, event_seq, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pos) DO UPDATE SET kind = excluded.kind,"
    " result = excluded.result, error = excluded.error,"
    " wake_at = coalesce(excluded.wake_at, wake_at), event_seq = excluded.event_seq,"
    " next_attempt_at = NULL, cut = NULL,"
    " updated_at = excluded.updated_at"
)
