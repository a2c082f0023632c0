"""Listing a class's actors from the index, by what they published (storage/attributes.py):
the filters, the order, the cursor, and the SQL they make.

The host gives the attributes no meaning: a status is a string to match, a time a number
to compare, a label a key and value to match exactly. Actors that published nothing are
listed only when no filter and no order by time asks for attributes.

An id prefix (`prefix`) is a range of the primary key's ids (`prefix <= id < the next
string after every id that begins with it`), so it is a lookup in either table, bounded
by an id's own bound (storage/paths.py's MAX_ID_BYTES).

A cursor (`after`) is where the last page ended: an id when listing by id; `MS/ID` when
listing by time (MS its updated time, ID the rest), so a page starts after that row and
no row is listed twice or skipped while others change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .paths import MAX_ID_BYTES

ORDERS = ("id", "updated", "-updated")
MAX_LIMIT = 10_000


@dataclass(frozen=True)
class Listed:
    id: str
    status: str | None = None
    updated_ms: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    first_ms: int | None = None  # its first publish: a workflow's start

    def key(self, order: str) -> tuple[Any, ...]:
        """Its place in `order` (what the processes' pages are merged by)."""
        if order == "id":
            return (self.id,)
        ms = self.updated_ms or 0
        return (-ms, _desc(self.id)) if order == "-updated" else (ms, self.id)

    def cursor(self, order: str) -> str:
        return self.id if order == "id" else f"{self.updated_ms}/{self.id}"

    def doc(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "updated_ms": self.updated_ms,
                "labels": self.labels, "first_ms": self.first_ms}


def _desc(s: str) -> tuple[int, ...]:
    """A key that sorts strings in reverse (for the merge of "-updated" pages)."""
    return tuple(-b for b in s.encode()) + (1,)


@dataclass(frozen=True)
class ListQuery:
    cls: str
    statuses: tuple[str, ...] = ()
    since: int | None = None   # updated_ms >= since
    until: int | None = None   # updated_ms <= until
    labels: tuple[tuple[str, str], ...] = ()
    order: str = "id"
    after: str = ""
    limit: int = 1000
    prefix: str = ""  # only ids that begin with it

    def __post_init__(self) -> None:
        try:
            size = len(self.prefix.encode())
        except UnicodeEncodeError:
            raise ValueError("prefix: valid Unicode (no lone surrogates)") from None
        if size > MAX_ID_BYTES:
            raise ValueError(f"prefix: at most {MAX_ID_BYTES} UTF-8 bytes (an id's bound)")
        if self.order not in ORDERS:
            raise ValueError(f"order: one of {', '.join(ORDERS)}, not {self.order!r}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit: 1 to {MAX_LIMIT}")
        if self.order != "id" and self.after:
            ms, sep, _ = self.after.partition("/")
            if not sep or not ms.lstrip("-").isdigit():
                raise ValueError(f"after: listing by time, a cursor is MS/ID (as a page's "
                                 f"`next` gives it), not {self.after!r}")

    @property
    def by_attributes(self) -> bool:
        return bool(self.statuses or self.since is not None or self.until is not None
                    or self.labels or self.order != "id")


def page_sql(q: ListQuery) -> tuple[str, list[Any]]:
    """The statement for one page of `q`: rows (id, status, updated_ms, labels, first_ms)."""
    if not q.by_attributes:
        more, bounds = _prefix("ac.id", q.prefix)
        return ("SELECT ac.id, a.status, a.updated_ms, a.labels, a.first_ms FROM actors ac"
                " LEFT JOIN attrs a ON a.cls = ac.cls AND a.id = ac.id"
                f" WHERE {' AND '.join(['ac.cls = ?', 'ac.id > ?', *more])}"
                " ORDER BY ac.id LIMIT ?", [q.cls, q.after, *bounds, q.limit])
    where, params = _filters(q)
    if q.after:
        where.append(_after_sql(q.order))
        params += _after_params(q)
    order = {"id": "a.id", "updated": "a.updated_ms, a.id",
             "-updated": "a.updated_ms DESC, a.id DESC"}[q.order]
    return (f"SELECT a.id, a.status, a.updated_ms, a.labels, a.first_ms FROM attrs a"
            f" WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?", [*params, q.limit])


def count_sql(q: ListQuery) -> tuple[str, list[Any]]:
    """The statement that counts every row `q` matches, on every page."""
    if not q.by_attributes:
        more, bounds = _prefix("id", q.prefix)
        return (f"SELECT count(*) FROM actors WHERE {' AND '.join(['cls = ?', *more])}",
                [q.cls, *bounds])
    where, params = _filters(q)
    return f"SELECT count(*) FROM attrs a WHERE {' AND '.join(where)}", params


def _filters(q: ListQuery) -> tuple[list[str], list[Any]]:
    where: list[str] = ["a.cls = ?"]
    params: list[Any] = [q.cls]
    if q.statuses:
        where.append(f"a.status IN ({', '.join('?' * len(q.statuses))})")
        params += list(q.statuses)
    if q.since is not None:
        where.append("a.updated_ms >= ?")
        params.append(q.since)
    if q.until is not None:
        where.append("a.updated_ms <= ?")
        params.append(q.until)
    for k, v in q.labels:
        where.append("EXISTS (SELECT 1 FROM labels l WHERE l.cls = a.cls AND l.k = ?"
                     " AND l.v = ? AND l.id = a.id)")
        params += [k, v]
    more, bounds = _prefix("a.id", q.prefix)
    return where + more, params + bounds


def _prefix(column: str, prefix: str) -> tuple[list[str], list[Any]]:
    """The conditions and parameters of the ids that begin with `prefix`: from it
    (included) to the first string past all of them (excluded), a range of the primary
    key (cls, id). SQLite compares TEXT as UTF-8 bytes, which is code point order."""
    if not prefix:
        return [], []
    end = _past(prefix)
    if end is None:  # every character is the last there is: no upper bound
        return [f"{column} >= ?"], [prefix]
    return [f"{column} >= ?", f"{column} < ?"], [prefix, end]


def _past(prefix: str) -> str | None:
    """The least string above every string that begins with `prefix` (None: none)."""
    head = prefix.rstrip(chr(0x10FFFF))
    if not head:
        return None
    c = ord(head[-1]) + 1
    return head[:-1] + chr(0xE000 if 0xD800 <= c <= 0xDFFF else c)


def _after_sql(order: str) -> str:
    if order == "id":
        return "a.id > ?"
    return "(a.updated_ms, a.id) > (?, ?)" if order == "updated" else \
        "(a.updated_ms, a.id) < (?, ?)"


def _after_params(q: ListQuery) -> list[Any]:
    if q.order == "id":
        return [q.after]
    ms, _, actor_id = q.after.partition("/")
    return [int(ms), actor_id]


def listed(row: tuple[Any, ...]) -> Listed:
    actor_id, status, updated_ms, labels, first_ms = row
    return Listed(str(actor_id), None if status is None else str(status),
                  None if updated_ms is None else int(updated_ms),
                  json.loads(labels) if isinstance(labels, str) else {},
                  None if first_ms is None else int(first_ms))


@dataclass(frozen=True)
class Page:
    rows: list[Listed]
    next: str | None         # the `after` of the next page; None: this is the last
    count: int | None = None  # every row the query matches, when asked

    def doc(self) -> dict[str, Any]:
        return {"ids": [r.id for r in self.rows], "actors": [r.doc() for r in self.rows],
                "next": self.next, "count": self.count}


def merged(q: ListQuery, parts: list[tuple[list[Listed], int | None]]) -> Page:
    """One page of `q` from each process's page of it (each process owns its own
    actors, so none is listed twice), and their counts summed."""
    rows = sorted((r for part, _ in parts for r in part), key=lambda r: r.key(q.order))
    full = len(rows) >= q.limit
    rows = rows[:q.limit]
    counts = [c for _, c in parts]
    total = None if any(c is None for c in counts) else sum(c or 0 for c in counts)
    return Page(rows, rows[-1].cursor(q.order) if full and rows else None, total)
