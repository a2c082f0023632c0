"""Listing a class's actors for operators: `/_wk/actors/{cls}`, across every process.

It reads the host's index only (storage/listing.py): no actor's event runs. Query:
  status=S        only actors whose published status is S (repeat, or S1,S2, for any of)
  since=MS        only those updated at or after MS (ms since the Unix epoch; a negative
                  MS counts back from the host's clock: -7200000 is two hours ago)
  until=MS        only those updated at or before MS (negative: as since)
  label=K=V       only those with label K equal to V (repeat: all of them)
  prefix=P        only those whose id begins with P (at most an id's 256 bytes)
  order=O         id (default), updated (oldest first) or -updated (newest first)
  after=CURSOR    the page after this one: a page's `next`
  limit=N         at most N actors (1 to 10,000; default 1,000)
  count=1         also count every actor that matches, on all pages
Answer: {"ids": [...], "actors": [{"id", "status", "updated_ms", "labels", "first_ms"}...],
         "next": CURSOR or null (the last page), "count": N or null}.
"""

from __future__ import annotations

import time

from aiohttp import web
from multidict import MultiMapping

from ..errors import BadRequest
from ..storage.listing import MAX_LIMIT, ListQuery
from .operator import may_read, plain
from .peers import list_page


def add_routes(app: web.Application) -> None:
    app.router.add_get("/_wk/actors/{cls}", _list_actors)


async def _list_actors(request: web.Request) -> web.Response:
    if not may_read(request):
        return plain(403, "listing actors is for operators and readers (send a token)")
    q, host = request.query, request.app["host"]
    try:
        query = query_from(request.match_info["cls"], q, host.clock.now_ms())
        if query.prefix and host.cluster is not None:
            raise ValueError("prefix: not in cluster mode (its store lists by the other "
                             "filters only)")
    except ValueError as e:
        raise BadRequest(str(e)) from None
    page = await list_page(request.app, query, q.get("count", "") in ("1", "true"))
    return web.json_response(page.doc())


def query_from(cls: str, q: MultiMapping[str], now_ms: int | None = None) -> ListQuery:
    """The ListQuery a request's query string asks for; a negative since or until counts
    back from `now_ms`, the host's clock (None: this machine's, which is the host's but
    under a test's fake clock). Raises ValueError naming the parameter that is wrong."""
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    statuses = tuple(s for v in q.getall("status", []) for s in v.split(",") if s)
    labels = []
    for item in q.getall("label", []):
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise ValueError(f"label: K=V, not {item!r}")
        labels.append((k, v))
    return ListQuery(cls, statuses, _ms(q, "since", now), _ms(q, "until", now),
                     tuple(labels), q.get("order", "id"), q.get("after", ""),
                     _whole(q, "limit", 1000, 1, MAX_LIMIT), q.get("prefix", ""))


def _ms(q: MultiMapping[str], name: str, now_ms: int) -> int | None:
    text = q.get(name)
    if text is None or text == "":
        return None
    try:
        ms = int(text)
    except ValueError:
        raise ValueError(f"{name}: a time in ms since the Unix epoch, not {text!r}") from None
    return now_ms + ms if ms < 0 else ms


def _whole(q: MultiMapping[str], name: str, default: int, low: int, high: int) -> int:
    text = q.get(name, str(default))
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {text!r}") from None
    if not low <= n <= high:
        raise ValueError(f"{name}: {low} to {high}, not {n}")
    return n
