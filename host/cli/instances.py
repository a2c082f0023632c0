"""The instances of a workflow class as the host's index knows them: what each one last
published (`GET /_wk/actors/{class}`, host/net/listing.py), filtered by the host and read a
page at a time, so that no instance runs an event for it.

One reading for `wkhost workflow list` and `bulk` (host/cli/listing.py) and for
WorkflowAdmin.list (host/cli/client.py). Each of them fetches a page its own way, since
each says in its own words (CliError, WorkflowError) that the host refused or did not
answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from wkguest.workflow.status import STATES

PAGE = 10_000  # the most the host gives in a page (storage/listing.py's MAX_LIMIT)

# (id, summary): the summary is the instance's "state", "updated_at" (ms on the host's
# clock, when it entered that state, as it published it) and "labels".
Instance = tuple[str, dict[str, Any]]
# One page of the listing for these query parameters: the host's answer, decoded.
FetchPage = Callable[[dict[str, Any]], dict[str, Any]]


def listing_url(server: str, cls: str, params: dict[str, Any]) -> str:
    """The URL of one page of the host's listing of `cls` with these query parameters (a
    list's values repeat the parameter; None and empty values are left out)."""
    q = urlencode({k: v for k, v in params.items() if v not in (None, "", [])}, doseq=True)
    return f"{server.rstrip('/')}/_wk/actors/{quote(cls, safe='')}?{q}"


def listing_params(*, status: str | None = None, since: int | None = None,
                   until: int | None = None, labels: Sequence[str] = (),
                   order: str = "id") -> dict[str, Any]:
    """The listing's query for workflow instances in `status` (any workflow state if
    None: an actor that published none is no instance), whose state began within
    [since, until] (host-clock ms; negative: back from the host's now) when given,
    labelled with each of `labels` ("K=V"), in `order` (storage/listing.py's ORDERS)."""
    return {"status": status or ",".join(STATES), "since": since, "until": until,
            "label": list(labels), "order": order}


def workflow_instances(fetch_page: FetchPage, *, status: str | None = None,
                       since: int | None = None, until: int | None = None,
                       labels: Sequence[str] = (), order: str = "id") -> list[Instance]:
    """Every instance `listing_params` selects, in `order`: one `fetch_page` a page.
    Raises what `fetch_page` raises."""
    params = listing_params(status=status, since=since, until=until, labels=labels,
                            order=order)
    return read_instances(fetch_page, params)[0]


def read_instances(fetch_page: FetchPage, params: dict[str, Any], *, after: str = "",
                   limit: int | None = None) -> tuple[list[Instance], str | None]:
    """The instances `params` selects after cursor `after`, at most `limit` (None: all),
    and the cursor of the next one if more may follow (None: there are no more)."""
    out: list[Instance] = []
    while True:
        want = PAGE if limit is None else min(PAGE, limit - len(out))
        page = fetch_page({**params, "after": after, "limit": want})
        out += [(a["id"], {"state": a["status"], "updated_at": a["updated_ms"],
                           "labels": a["labels"], "started_at": a.get("first_ms")})
                for a in page["actors"]]
        after = page["next"]
        if after is None or (limit is not None and len(out) >= limit):
            return out, after


def count_instances(fetch_page: FetchPage, params: dict[str, Any]) -> int:
    """How many instances `params` selects, on every page: one request."""
    return int(fetch_page({**params, "limit": 1, "count": 1})["count"])
