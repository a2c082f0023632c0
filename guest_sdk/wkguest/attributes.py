"""What this actor publishes for operators to list it by, with no event of it (WIT
interface `attributes`).

    attributes.publish("shipped", lifecycle.now(), {"region": "eu"})

The host's listing (`GET /_wk/actors/{class}`, `wkhost actors --status shipped`) filters,
sorts and counts on these alone. They are written with the actor's data: inside an open
transaction they commit or roll back with it; otherwise they commit in one transaction
with the event's next SQL statement, or at the event's end if none follows.
"""

from __future__ import annotations

from collections.abc import Mapping

from wkguest import _bindings as _b
from wkguest import readonly
from wkguest.errors import WkError

__all__ = ["PublishError", "publish"]


class PublishError(WkError):
    """The host refused what was published (a status, key or value out of its bounds, too
    many labels, a full database)."""


def publish(status: str, updated_ms: int, labels: Mapping[str, str] | None = None) -> None:
    """Replace what this actor publishes: `status` (1 to 64 bytes), when it was updated
    (ms since the Unix epoch), and `labels` (at most 16; keys 1 to 64 bytes, values at
    most 256; None keeps those published before). Raises PublishError, ReadOnlyError
    (while code that may only read runs: `wkguest.readonly`)."""
    readonly.refuse("publishing")
    pairs = None if labels is None else [(str(k), str(v)) for k, v in labels.items()]
    try:
        _b.attributes.publish(status, max(0, int(updated_ms)), pairs)
    except _b.Err as e:
        raise PublishError(str(e.value)) from None
