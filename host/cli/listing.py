"""`wkhost workflow list`: the instances of a class, with their states, from the host's
index (what each instance published: host/net/listing.py), so that no instance wakes."""

from __future__ import annotations

import argparse
import json
from typing import Any

from wkguest.workflow.status import STATES

from .actors import fetch_page, time_arg
from .client import WorkflowAdmin
from .instances import Instance, workflow_instances
from .options import Exit
from .text import when


def add_args(p: argparse.ArgumentParser) -> None:
    """The options of `workflow list` beyond CLASS, the server's and --json."""
    p.add_argument("--status", dest="state", default=None, choices=list(STATES),
                   help="only instances in this state")
    p.add_argument("--since", type=time_arg, default=None, metavar="TIME",
                   help="only instances whose state began at or after TIME (ms since the "
                   "Unix epoch, or ISO 8601)")
    p.add_argument("--until", type=time_arg, default=None, metavar="TIME",
                   help="only instances whose state began at or before TIME")


def select(admin: WorkflowAdmin, cls: str, *, status: str | None = None,
           since: int | None = None, until: int | None = None) -> list[Instance]:
    """(id, summary) of each instance of `cls` in `status`, whose state began within
    [since, until] (host-clock ms) when given: what `list` shows, and what bulk
    operations act on (host/cli/instances.py; the summary: its "state", "updated_at"
    and "labels"). Filtered by the host, from its index: no instance runs an event for
    it. Raises CliError if the host refuses, or does not answer."""
    def page(params: dict[str, Any]) -> dict[str, Any]:
        return fetch_page(admin.base_url, admin.token, cls, params)

    return workflow_instances(page, status=status, since=since, until=until)


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    rows = select(admin, args.cls, status=args.state, since=getattr(args, "since", None),
                  until=getattr(args, "until", None))
    if args.json:
        print(json.dumps([{"id": i, **s} for i, s in rows], default=str))
    for actor_id, s in rows if not args.json else []:
        print(f"{actor_id}\t{s['state']}\tsince {when(int(s['updated_at']))}")
    return Exit.OK
