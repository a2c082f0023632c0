"""A test's mocks of one instance, set through wk-workflow/v1's `test` route
(docs/workflow-protocol.md): what a step's attempts come to without running its function,
whether sleeps pass at once, and which event waits time out at once.

The map a test sends (`parse` checks it, naming what is wrong):

    {"steps": {NAME: [RULE, ...]}, "sleeps": "skip", "event_timeouts": [NAME, ...]}

each key optional; a RULE is `{"times": N}` (N ≥ 1; absent or null: every attempt left)
with exactly one of `"result": VALUE`, `"error": TEXT` (and `"non_retryable": BOOL`) or
`"timeout": true`. The rules of a name cover its attempts at a position in order, 1, 2, 3,
...: the first attempts 1..times, the next the following ones; an attempt past them all
runs the function. The attempt machine (attempt.py) asks `step_rule` once per new attempt
(of a step, or of a group's step branch), and only when the frontier holds mocks; the
sleeps and waits (waits.py) ask `skip_sleeps` and `forces_event_timeout`.

Where they live: the instance's own database, not the guest's memory, so that a test runs
the same in the real sandbox. `_wk_wf_test` holds one row, the map as the runner stores
any value (values.py: JSON, tags and all, so a bytes result survives; it is always read
back as tagged, which a text without tags decodes to as well). Only the route makes the
table. Each event's LOAD (instance.py) says whether it is there; the runner reads it only
then, once (`read`), and the route sets the runner's copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backend import Backend
from ..errors import StoreFault
from .values import check_name, decode

TABLE = "_wk_wf_test"
MAKE = (f"/*wk:test-table*/ CREATE TABLE IF NOT EXISTS {TABLE}"
        " (id INTEGER PRIMARY KEY CHECK (id = 1), mocks TEXT NOT NULL)")
PUT = f"/*wk:test*/ INSERT OR REPLACE INTO {TABLE} (id, mocks) VALUES (1, ?)"
READ = f"SELECT mocks FROM {TABLE} WHERE id = 1"
# In the LOAD's json_array: 1 where a test set mocks, else null.
THERE = f"(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}')"
_EXISTS = f"SELECT {THERE}"

RESULT, ERROR, TIMEOUT = "result", "error", "timeout"
SKIP = "skip"
_KEYS = frozenset({"steps", "sleeps", "event_timeouts"})
_RULE_KEYS = frozenset({"times", RESULT, ERROR, TIMEOUT, "non_retryable"})


class MockedError(Exception):
    """What an attempt a test's error rule failed "raised": its delay function's error."""


@dataclass(frozen=True, slots=True)
class Rule:
    """How `times` attempts (None: every attempt left) come to `kind`: RESULT (`value`,
    returned), ERROR (`value`, the error's text, `non_retryable` or not) or TIMEOUT."""

    kind: str
    times: int | None
    value: Any = None
    non_retryable: bool = False


class Mocks:
    """An instance's mocks, parsed (see the module's doc)."""

    __slots__ = ("steps", "skip_sleeps", "event_timeouts")

    def __init__(self, steps: dict[str, list[Rule]], skip_sleeps: bool,
                 event_timeouts: frozenset[str]) -> None:
        self.steps = steps
        self.skip_sleeps = skip_sleeps
        self.event_timeouts = event_timeouts

    def step_rule(self, name: str, attempt: int) -> Rule | None:
        """The rule of attempt `attempt` (1, 2, ...) of step `name`, or None: it runs."""
        for rule in self.steps.get(name, ()):
            if rule.times is None or attempt <= rule.times:
                return rule
            attempt -= rule.times
        return None

    def forces_event_timeout(self, name: str) -> bool:
        """Whether a wait for event `name` times out at once (a timeout of 0)."""
        return name in self.event_timeouts


def parse(m: object) -> Mocks | None:
    """The mocks of map `m`, or None for none (`{}`). Raises ValueError naming what is
    wrong. A result's value is checked where it is recorded (the step's record)."""
    if not isinstance(m, dict):
        raise ValueError("'mocks' must be a map")
    _known(m, _KEYS, "'mocks'")
    steps = {} if m.get("steps") is None else m["steps"]
    if not isinstance(steps, dict):
        raise ValueError("'mocks.steps' must be a map of step names to lists of rules")
    rules = {_name(name, "step", "mocks.steps"): _rules(name, got)
             for name, got in steps.items()}
    sleeps = m.get("sleeps")
    if sleeps not in (None, SKIP):
        raise ValueError(f"'mocks.sleeps' must be {SKIP!r} (or absent), not {sleeps!r}")
    waits = [] if m.get("event_timeouts") is None else m["event_timeouts"]
    if not isinstance(waits, list):
        raise ValueError("'mocks.event_timeouts' must be a list of event names")
    names = frozenset(_name(w, "event", "mocks.event_timeouts") for w in waits)
    if not (rules or sleeps or names):
        return None
    return Mocks(rules, sleeps == SKIP, names)


def _known(m: dict[str, Any], keys: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in m if k not in keys)
    if unknown:
        raise ValueError(f"{where} has no key {unknown[0]!r} (it takes "
                         f"{', '.join(sorted(keys))})")


def _name(name: object, what: str, where: str) -> str:
    try:
        return check_name(name, what)
    except (TypeError, ValueError) as e:
        raise ValueError(f"'{where}': {e}") from None


def _rules(name: str, got: object) -> list[Rule]:
    if not isinstance(got, list):
        raise ValueError(f"'mocks.steps[{name!r}]' must be a list of rules")
    out: list[Rule] = []
    for i, r in enumerate(got, 1):
        where = f"rule {i} of step {name!r}"
        if out and out[-1].times is None:
            raise ValueError(f"{where} follows one for every attempt left (no 'times'): "
                             "it would never apply")
        out.append(_rule(r, where))
    return out


def _rule(r: object, where: str) -> Rule:
    if not isinstance(r, dict):
        raise ValueError(f"{where} must be a map")
    _known(r, _RULE_KEYS, where)
    times = r.get("times")
    if times is not None and (type(times) is not int or times < 1):
        raise ValueError(f"{where}: 'times' must be an int of 1 or more, not {times!r}")
    kinds = [k for k in (RESULT, ERROR, TIMEOUT) if k in r]
    if len(kinds) != 1:
        raise ValueError(f"{where} must have exactly one of 'result', 'error', 'timeout'")
    kind = kinds[0]
    non_retryable = r.get("non_retryable", False)
    if kind != ERROR and "non_retryable" in r:
        raise ValueError(f"{where}: 'non_retryable' goes with 'error' only")
    if not isinstance(non_retryable, bool):
        raise ValueError(f"{where}: 'non_retryable' must be true or false")
    if kind == ERROR and not isinstance(r[ERROR], str):
        raise ValueError(f"{where}: 'error' must be a text")
    if kind == TIMEOUT and r[TIMEOUT] is not True:
        raise ValueError(f"{where}: 'timeout' must be true")
    return Rule(kind, times, r.get(kind), non_retryable)


def timed_out(attempt: int) -> str:
    """A forced timeout's error, for a step that has no timeout (timeouts.py's message
    for one that has)."""
    return f"timed out: attempt {attempt} (forced by the test: the step has no timeout)"


# -- the table ------------------------------------------------------------------------

def read(db: Backend, probe: bool = True) -> Mocks | None:
    """The instance's mocks, as the route stored them (`PUT`, after `MAKE`). `probe`: ask
    first whether the table is there (a LOAD said it is, otherwise)."""
    if probe and db.query_row(_EXISTS) in (None, (None,)):
        return None
    row = db.query_row(READ)
    try:
        return None if row is None else parse(decode(str(row[0]), True))
    except ValueError as e:
        raise StoreFault(f"the test's mocks stored in {TABLE} do not parse: {e}") from None
