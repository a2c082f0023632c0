"""`wkhost workflow list`: the instances of a class, with their states."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .client import WorkflowAdmin
from .options import Exit


def add_args(p: argparse.ArgumentParser) -> None:
    """The options of `workflow list` beyond CLASS, the server's and --json."""
    p.add_argument("--status", dest="state", default=None,
                   choices=["running", "waiting", "compensating", "completed", "failed",
                            "cancelled", "parked"],
                   help="only instances in this state")


def select(admin: WorkflowAdmin, cls: str, *, status: str | None = None,
           since: int | None = None, until: int | None = None
           ) -> list[tuple[str, dict[str, Any]]]:
    """(id, summary) of each instance of `cls` in `status`, updated within [since, until]
    (host-clock ms) when given: what `list` shows, and what bulk operations act on."""
    rows = admin.list(cls, status)
    return [(i, s) for i, s in rows
            if (since is None or s.get("updated_at", 0) >= since)
            and (until is None or s.get("updated_at", 0) <= until)]


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    rows = select(admin, args.cls, status=args.state)
    if args.json:
        print(json.dumps([{"id": i, **s} for i, s in rows], default=str))
    for actor_id, s in rows if not args.json else []:
        line = f"{actor_id}\t{s.get('state')}\t{s.get('positions', 0)} positions"
        # A parked instance waits for an operator: the list says why, on its line.
        print(f"{line}\t{s.get('error')}" if s.get("state") == "parked" else line)
    return Exit.OK
