"""`wkhost workflow list`: the instances of a class, with their states and labels, from
the host's index (what each instance published: host/net/listing.py), so that no
instance wakes. Its filters, order and pages are `wkhost actors`' (host/cli/actors.py)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from wkguest.workflow.status import FINISHED_STATES as FINISHED
from wkguest.workflow.status import STATES

from .actors import add_filter_args, add_order_args, fetch_page, filter_params
from .client import WorkflowAdmin
from .instances import (
    FetchPage,
    Instance,
    count_instances,
    listing_params,
    read_instances,
    workflow_instances,
)
from .options import CliError, Exit
from .text import when


def add_args(p: argparse.ArgumentParser) -> None:
    """The options of `workflow list` beyond CLASS, the server's and --json."""
    p.add_argument("--status", dest="state", action="append", choices=list(STATES),
                   help="only instances in this state; repeat for any of several")
    add_filter_args(p, "instances whose state began")
    add_order_args(p)
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="list at most N instances (default: all of them)")


def select(admin: WorkflowAdmin, cls: str, *, status: str | None = None,
           since: int | None = None, until: int | None = None,
           labels: tuple[str, ...] = ()) -> list[Instance]:
    """(id, summary) of each instance of `cls` in `status`, whose state began within
    [since, until] (host-clock ms) when given, labelled with each of `labels` ("K=V"):
    what bulk operations act on (host/cli/operate.py; the summary: its "state",
    "updated_at" and "labels"). Filtered by the host, from its index: no instance runs
    an event for it. Raises CliError if the host refuses, or does not answer."""
    return workflow_instances(_pages(admin, cls), status=status, since=since, until=until,
                              labels=labels)


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise CliError("--limit takes 1 or more")
    given = filter_params(args)
    after = given.pop("after")
    params = {**listing_params(status=",".join(args.state or ())), **given}
    pages = _pages(admin, args.cls)
    if args.count:
        print(count_instances(pages, params))
        return Exit.OK
    rows, more = read_instances(pages, params, after=after, limit=args.limit)
    if args.json:
        print(json.dumps([{"id": i, **s} for i, s in rows], default=str))
    for actor_id, s in rows if not args.json else []:
        print(_line(actor_id, s))
    if more is not None:
        print(f"wkhost: --limit {args.limit} reached; more may follow: "
              f"--after {shlex.quote(more)}", file=sys.stderr)
    return Exit.OK


def _pages(admin: WorkflowAdmin, cls: str) -> FetchPage:
    def page(params: dict[str, Any]) -> dict[str, Any]:
        return fetch_page(admin.base_url, admin.token, cls, params)

    return page


def _line(actor_id: str, s: dict[str, Any]) -> str:
    """`id<TAB>state<TAB>since TIME<TAB>started TIME`, `<TAB>ran SECONDS` once it has
    finished (its state began as it ended), and its labels after another tab if it has
    any. An instance listed before its start was kept (first published by an older
    host) shows no start."""
    since, started = int(s["updated_at"]), s.get("started_at")
    parts = [actor_id, s["state"], f"since {when(since)}"]
    if started is not None:
        parts.append(f"started {when(int(started))}")
        if s["state"] in FINISHED:
            parts.append(f"ran {(since - int(started)) / 1000:.2f} s")
    labels = " ".join(f"{k}={v}" for k, v in sorted((s.get("labels") or {}).items()))
    return "\t".join(parts + ([labels] if labels else []))
