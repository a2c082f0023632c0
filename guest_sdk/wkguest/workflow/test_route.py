"""wk-workflow/v1's `test` route: what a test kit asks of one instance (wkhost's
testkit/, docs/testing-workflows.md). Operators only, and only through a host started
with --fake-clock (its front door refuses the route otherwise).

One of, in the request's CBOR map:
- `"mocks": MAP`: replace the instance's mocks (core/mocks.py has the map); an instance
  not started yet keeps them for its start. Answers `{"mocks": MAP}`.
- `"sql": TEXT` (and `"params": [...]`): read the instance's own database, in a read-only
  event (the host refuses a change). Answers `{"columns": [...], "rows": [[...], ...]}`,
  a blob as `{"b64": TEXT}`.
- `"replay": true`: replay the recorded journal with this code, dry (events/dry_replay.py:
  nothing new runs, nothing is written). Answers `{"ended": BOOL, "position": INT,
  "output": VALUE, "error": TEXT | null}`: whether the function ended over the journal
  (and what it returned), or where it stopped for new work; `error` when the journal
  does not replay with this code (the reorder's text names the position and both calls),
  with its `kind`: reordered, undecodable (a recorded value or the input), or code.
"""

from __future__ import annotations

import json
from typing import Any

from wkguest.errors import ReadOnlyError
from wkguest.readonly import read_only

from .core import mocks
from .core.requests import BadRequest
from .core.runner import Runner
from .errors import StoreFault
from .events import dry_replay
from .routes import Reply, encode_field, reply

_ONE_OF = ("mocks", "sql", "replay")


def answer(runner: Runner, msg: dict[str, Any]) -> Reply:
    asked = [k for k in _ONE_OF if k in msg]
    if len(asked) != 1:
        raise BadRequest(400, "bad-request", "test: give one of 'mocks', 'sql' or 'replay'")
    if asked[0] == "mocks":
        return _mocks(runner, msg["mocks"])
    if asked[0] == "sql":
        return _sql(runner, msg["sql"], msg.get("params", []))
    return _replay(runner)


def _mocks(runner: Runner, given: Any) -> Reply:
    try:
        parsed = mocks.parse(given)
    except ValueError as e:
        raise BadRequest(400, "bad-request", f"test: {e}") from None
    text = encode_field(given, runner.config.max_value_bytes, "the mocks")[0]
    runner.db.exec(mocks.MAKE)
    runner.store.durable(mocks.PUT, (text,))
    runner.mocks, runner.mocks_known = parsed, True
    return reply({"mocks": given})


def _sql(runner: Runner, sql: Any, params: Any) -> Reply:
    if not isinstance(sql, str) or not isinstance(params, list):
        raise BadRequest(400, "bad-request", "test: 'sql' is text, 'params' a list")
    try:
        with read_only("the test route's sql"):
            packed = json.loads(runner.db.query_packed(sql, params))
    except (StoreFault, ReadOnlyError) as e:
        raise BadRequest(400, "bad-request", f"test: the sql failed: {e}") from None
    return reply({"columns": packed[0], "rows": packed[1:]})


def _replay(runner: Runner) -> Reply:
    try:
        got = dry_replay.replay(runner)
    except dry_replay.NotReplayable as e:
        return reply({"ended": False, "position": None, "output": None, "error": str(e),
                      "kind": e.kind})
    if got is None:
        raise BadRequest(404, "unknown", "no such workflow instance (never started, or "
                         "past its retention)")
    return reply({"ended": got.ended, "position": got.run.position, "output": got.output,
                  "error": None})
