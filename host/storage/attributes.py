"""What an actor publishes (WIT `attributes`): checked, encoded, and kept in its database.

The truth is the actor's `_wk_host_meta` row 'attrs' (JSON: status, updated_ms, labels,
and first_ms, the time of its first publish: a workflow's start; written and read by
storage/host_rows.py), which guest SQL cannot read or write; the
host's index (storage/index.py) copies it after each event that published, and a rebuild
reads it back from every database. A row in the meta table, not a table of its own, so
that databases made before it need nothing new.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_STATUS_BYTES = 64
MAX_LABELS = 16
MAX_KEY_BYTES = 64
MAX_VALUE_BYTES = 256

@dataclass(frozen=True)
class Attributes:
    status: str
    updated_ms: int
    labels: tuple[tuple[str, str], ...] = ()
    # The updated_ms of the actor's first publish (a workflow publishes as it is made);
    # None for one whose first publish came before this was kept.
    first_ms: int | None = None

    def encoded(self) -> str:
        doc: dict[str, Any] = {"status": self.status, "updated_ms": self.updated_ms,
                               "labels": dict(self.labels)}
        if self.first_ms is not None:
            doc["first_ms"] = self.first_ms
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)

    def labels_json(self) -> str:
        return json.dumps(dict(self.labels), separators=(",", ":"), sort_keys=True)


def checked(status: str, updated_ms: int, labels: list[tuple[str, str]] | None,
            before: Attributes | None) -> Attributes:
    """The attributes a publish asks for (labels None: `before`'s). Raises ValueError
    with the guest's one-line reason."""
    if not 1 <= len(status.encode()) <= MAX_STATUS_BYTES:
        raise ValueError(f"a status has 1 to {MAX_STATUS_BYTES} bytes")
    if labels is None:
        kept = before.labels if before is not None else ()
    else:
        if len(labels) > MAX_LABELS:
            raise ValueError(f"at most {MAX_LABELS} labels")
        for k, v in labels:
            if not 1 <= len(k.encode()) <= MAX_KEY_BYTES:
                raise ValueError(f"a label's key has 1 to {MAX_KEY_BYTES} bytes")
            if len(v.encode()) > MAX_VALUE_BYTES:
                raise ValueError(f"label {k!r}: a value has at most {MAX_VALUE_BYTES} bytes")
        kept = tuple(sorted(dict(labels).items()))
    first = int(updated_ms) if before is None else before.first_ms
    return Attributes(status, int(updated_ms), kept, first)


def decoded(text: Any) -> Attributes | None:
    """The row's attributes; None for no row (or one this host cannot read)."""
    if not isinstance(text, str):
        return None
    try:
        doc = json.loads(text)
        labels = tuple(sorted((str(k), str(v)) for k, v in doc.get("labels", {}).items()))
        first = doc.get("first_ms")
        return Attributes(str(doc["status"]), int(doc["updated_ms"]), labels,
                          None if first is None else int(first))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
