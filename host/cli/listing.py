"""`wkhost workflow list`: the instances of a class, with their states."""

from __future__ import annotations

import argparse
import json

from .client import WorkflowAdmin
from .options import Exit


def add_args(p: argparse.ArgumentParser) -> None:
    """The options of `workflow list` beyond CLASS, the server's and --json."""
    p.add_argument("--status", dest="state", default=None,
                   choices=["running", "waiting", "compensating", "completed", "failed",
                            "cancelled", "parked"],
                   help="only instances in this state")


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    rows = admin.list(args.cls, args.state)
    if args.json:
        print(json.dumps([{"id": i, **s} for i, s in rows], default=str))
    for actor_id, s in rows if not args.json else []:
        line = f"{actor_id}\t{s.get('state')}\t{s.get('positions', 0)} positions"
        # A parked instance waits for an operator: the list says why, on its line.
        print(f"{line}\t{s.get('error')}" if s.get("state") == "parked" else line)
    return Exit.OK
