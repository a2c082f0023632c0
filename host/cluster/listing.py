"""Listing a class's actors in cluster mode: the same filters, order and cursor as the
single node's index (storage/listing.py), over the store's `actors` table, whose
`attrs` column holds what each actor last published (as storage/attributes.py encodes
it: JSON with status, updated_ms and labels), written with each of its durable writes.

So any node lists every node's actors, in one query, and the answer is what the store
holds: an actor's newest attributes once its write is acknowledged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_J = "(a.attrs::jsonb)"
_MS = f"({_J}->>'updated_ms')::bigint"


@dataclass(frozen=True)
class Filters:
    """storage.listing.ListQuery's fields, as plain values (cluster/ does not import
    storage/)."""

    cls: str
    statuses: tuple[str, ...] = ()
    since: int | None = None
    until: int | None = None
    labels: tuple[tuple[str, str], ...] = ()
    order: str = "id"
    after: str = ""
    limit: int = 1000

    @property
    def by_attributes(self) -> bool:
        return bool(self.statuses or self.since is not None or self.until is not None
                    or self.labels or self.order != "id")


def page_sql(f: Filters) -> tuple[str, list[Any]]:
    """One page: rows (id, attrs)."""
    where, params = _where(f)
    if f.after:
        clause, more = _after(f)
        where.append(clause)
        params += more
    order = {"id": "a.id", "updated": f"{_MS}, a.id",
             "-updated": f"{_MS} DESC, a.id DESC"}[f.order]
    return (f"SELECT a.id, a.attrs FROM actors a WHERE {' AND '.join(where)} "
            f"ORDER BY {order} LIMIT %s", [*params, f.limit])


def count_sql(f: Filters) -> tuple[str, list[Any]]:
    where, params = _where(f)
    return f"SELECT count(*) FROM actors a WHERE {' AND '.join(where)}", params


def _where(f: Filters) -> tuple[list[str], list[Any]]:
    where: list[str] = ["a.cls = %s"]
    params: list[Any] = [f.cls]
    if not f.by_attributes:
        return where, params
    where.append("a.attrs IS NOT NULL")
    if f.statuses:
        where.append(f"{_J}->>'status' = ANY(%s)")
        params.append(list(f.statuses))
    if f.since is not None:
        where.append(f"{_MS} >= %s")
        params.append(f.since)
    if f.until is not None:
        where.append(f"{_MS} <= %s")
        params.append(f.until)
    for k, v in f.labels:  # each its own: two values asked of one key match nothing
        where.append(f"{_J}->'labels' @> %s::jsonb")
        params.append(json.dumps({k: v}))
    return where, params


def _after(f: Filters) -> tuple[str, list[Any]]:
    if f.order == "id":
        return "a.id > %s", [f.after]
    ms, _, actor_id = f.after.partition("/")
    op = ">" if f.order == "updated" else "<"
    return f"({_MS}, a.id) {op} (%s, %s)", [int(ms), actor_id]
