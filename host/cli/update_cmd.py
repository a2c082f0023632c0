"""`wkhost workflow update CLASS ID NAME [--arg JSON]`: send an update to an instance
(`wf.on_update`) and print its handler's answer once it has ended; or, with
`--update-id` alone, ask again how an update stands.

The request waits for the handler's end, up to --timeout seconds (the host holds one
request up to 120 s, so a longer wait asks again). An update still running then exits 4
with its id on stderr: the same command with `--update-id ID` and no NAME asks again.
An id is made for every update sent, so that asking again, or sending again after a
lost answer, never applies it twice."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Any

from .client import Started, Update, WorkflowAdmin
from .options import CliError, Exit, add_server_args, exit_status_epilog, json_arg
from .status_text import print_status
from .text import seconds_arg

_HOLD = 120.0  # seconds: what the host holds one request for (MAX_HOLD_MS)


def add_command(ws: Any) -> argparse.ArgumentParser:
    """The command's parser (workflow.py sets how it runs)."""
    p: argparse.ArgumentParser = ws.add_parser(
        "update", help="send an update to an instance and print its handler's answer",
        description=(__doc__ or "").split("\n\n", 1)[1].strip(),
        epilog="examples:\n  wkhost workflow update carts c-1 add --arg '\"book\"'\n"
               "  wkhost workflow update carts c-1 --update-id 5f0c2a9e\n\n"
               + exit_status_epilog("workflow update"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cls", metavar="CLASS", help="the workflow class, e.g. carts")
    p.add_argument("id", metavar="ID", help="the instance id, e.g. c-1")
    p.add_argument("name", metavar="NAME", nargs="?",
                   help="the update's name (its handler's: wf.on_update); leave it out "
                        "with --update-id to ask how that update stands")
    p.add_argument("--arg", default="null", help="the update's argument, as JSON or @FILE "
                   "(default null)")
    p.add_argument("--update-id", metavar="UID", help="the update's id: the same id "
                   "answers the same update, never applying it twice (default: a new one)")
    p.add_argument("--timeout", type=seconds_arg, default=60.0, metavar="SECONDS",
                   help="wait this long for the handler's end (seconds, or a duration: "
                        "5m), then exit 4 with the update's id (default %(default)g s)")
    p.add_argument("--json", action="store_true",
                   help="print the whole update (id, state, result, error, position)")
    add_server_args(p)
    return p


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    """The command, given the workflow commands' admin (workflow.py runs it)."""
    if args.name is None and args.update_id is None:
        raise CliError("give the update's NAME, or --update-id UID to ask again")
    if not args.timeout >= 0:
        raise CliError("--timeout must be 0 or more seconds")
    uid = args.update_id or os.urandom(8).hex()
    deadline = time.monotonic() + args.timeout
    u = (admin.update(args.cls, args.id, args.name, json_arg(args.arg, "--arg"), update_id=uid,
                      wait=min(args.timeout, _HOLD)) if args.name is not None else
         admin.update_status(args.cls, args.id, uid, wait=min(args.timeout, _HOLD)))
    while not u.done and (left := deadline - time.monotonic()) > 0.5:
        u = admin.update_status(args.cls, args.id, uid, wait=min(left, _HOLD))
    return _report(args, u)


def after_start(admin: WorkflowAdmin, args: argparse.Namespace, first: Started,
                deadline: float | None) -> int:
    """`workflow start --update NAME`: the start's status with its update, once the
    update has ended if --wait (up to --timeout); the exit code is the update's, as
    this command's."""
    u = first.update
    assert u is not None
    while deadline is not None and not u.done and (left := deadline - time.monotonic()) > 0.5:
        u = admin.update_status(args.cls, args.id, u.id, wait=min(left, _HOLD))
    print_status(args.cls, args.id, dataclasses.replace(first, update=u), args.json, first)
    return _outcome(args, u) if deadline is not None or u.state == "failed" else Exit.OK


def _report(args: argparse.Namespace, u: Update) -> int:
    if args.json:
        print(json.dumps({k: getattr(u, k) for k in u.__dataclass_fields__}, default=repr))
    elif u.state == "completed":
        print(json.dumps(u.result, default=repr))
    return _outcome(args, u)


def _outcome(args: argparse.Namespace, u: Update) -> int:
    """The exit code of update `u` as it stands, saying on stderr why it is not 0."""
    target = f"{args.cls}/{args.id}"
    if u.state == "completed":
        return Exit.OK
    if u.state == "failed":
        print(f"wkhost: {target}: update {u.name!r} failed: {u.error}", file=sys.stderr)
        return Exit.FAILED
    print(f"wkhost: {target}: update {u.name!r} is {u.state}, not ended yet: ask again "
          f"with `wkhost workflow update {args.cls} {args.id} --update-id {u.id}`",
          file=sys.stderr)
    return Exit.TIMED_OUT
