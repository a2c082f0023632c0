"""The instance's labels (search attributes): text pairs operators find it by beside its
state (`wkhost workflow list CLASS --label k=v`), published with the state through the
host's WIT `attributes` (publish.py).

    _wk_wf_labels  one row once the instance has labels: the map, as JSON

Two places set them: a start's `labels` (the protocol's start message) and
`wf.set_labels(...)` in the workflow's code (events/calls.py). Neither is journaled and
neither takes a position: a label is what the instance shows, not an effect to do once.
The labels belong to the instance, not to a run: a continue-as-new or a restart keeps
them.

Replay: the function runs from the top in every event, so a run calls `set_labels` again
for every call it passed before. Each run builds its set from the labels stored when it
began and its own calls, in order; at the run's next state write (publish.py) the set is
compared with what was stored and published, and only a difference is written and
published. Applying the same calls again to their own result changes nothing, so a
replay writes and publishes nothing. A fresh guest instance reads the stored labels once,
at its first `set_labels`, and publishes them with its first state write, as it
publishes that state again.

The bounds are the host's (wkhost's host/storage/attributes.py: a guest SDK cannot import
it; tests/unit/workflow/test_wf_labels.py holds the two the same).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..backend import Backend, Param
from ..errors import StoreFault
from .requests import BadRequest

MAX_LABELS = 16
MAX_KEY_BYTES = 64
MAX_VALUE_BYTES = 256

TABLE = "_wk_wf_labels"
# Made by the first write of labels (a start with labels, or a run that set some): an
# instance that never had any has no table.
SCHEMA = (f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1),"
          " labels TEXT NOT NULL)")
_WRITE = f"/*wk:labels*/ INSERT OR REPLACE INTO {TABLE} (id, labels) VALUES (1, ?)"
_READ = f"SELECT labels FROM {TABLE}"
_EXISTS = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{TABLE}'"

Labels = dict[str, str]


def changes(given: Any, what: str) -> dict[str, str | None]:
    """`given` as label changes: text keys, each to a text value, or to None (removed).
    Raises TypeError or ValueError naming `what` and the bound."""
    if not isinstance(given, Mapping):
        raise TypeError(f"{what} takes a map of text keys to text values, not "
                        f"{type(given).__name__}")
    out: dict[str, str | None] = {}
    for k, v in given.items():
        if not isinstance(k, str) or not 1 <= len(k.encode()) <= MAX_KEY_BYTES:
            raise ValueError(f"{what}: a label's key is text of 1 to {MAX_KEY_BYTES} bytes, "
                             f"not {k!r}")
        if v is not None and not isinstance(v, str):
            raise TypeError(f"{what}: label {k!r}: a value is text (or None to remove it), "
                            f"not {type(v).__name__}")
        if v is not None and len(v.encode()) > MAX_VALUE_BYTES:
            raise ValueError(f"{what}: label {k!r}: a value has at most {MAX_VALUE_BYTES} "
                             "bytes")
        out[k] = v
    return out


def merged(base: Labels, given: Mapping[str, str | None], what: str) -> Labels:
    """`base` with `given` applied (a None value removes its key). Raises ValueError
    when the result has more labels than the host keeps."""
    out = dict(base)
    for k, v in given.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    if len(out) > MAX_LABELS:
        raise ValueError(f"{what}: an instance has at most {MAX_LABELS} labels, and these "
                         f"would make {len(out)}")
    return out


def start_field(msg: dict[str, Any]) -> Labels:
    """A start's `labels` (absent or null: none). Raises BadRequest (400) beyond the
    host's bounds, before anything is recorded."""
    given = msg.get("labels")
    if given is None:
        return {}
    try:
        got = merged({}, changes(given, "'labels'"), "'labels'")
        if len(got) != len(given):
            raise ValueError("'labels': a start gives values, not None")
    except (TypeError, ValueError) as e:
        raise BadRequest(400, "bad-request", str(e)) from None
    return got


def writes(labels: Labels) -> list[tuple[str, tuple[Param, ...]]]:
    """The statements that store `labels` as the instance's (one call: exec_many)."""
    text = json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return [(SCHEMA, ()), (_WRITE, (text,))]


def read(db: Backend) -> Labels:
    """The instance's stored labels ({} when it has none). Raises StoreFault."""
    try:
        row = db.query_row(_READ)
    except StoreFault:
        if db.query_row(_EXISTS) is not None:
            raise
        return {}
    if row is None:
        return {}
    try:
        doc = json.loads(row[0])
    except (TypeError, ValueError):
        raise StoreFault("the instance's labels are not JSON") from None
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}
