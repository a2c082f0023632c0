"""`wkhost workflow terminate|pause|resume|rescue|restart|bulk`: an operator's moves on an
instance (the runner's ops.py), and any of them over a filter with a dry run that only
counts. Each prints the status after the move (workflow.py prints it)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from . import audit, listing
from .client import Status, WorkflowAdmin, WorkflowError
from .options import CliError, Exit
from .text import parse_time

MOVES = ("terminate", "pause", "resume", "rescue", "restart", "cancel")
STATES = ["running", "waiting", "compensating", "completed", "failed", "cancelled",
          "parked", "paused", "terminated"]
# The moves that answer a finished instance with its status, changing nothing (the
# others refuse what they cannot do): the state each leaves when it did its work.
_DONE = {"terminate": {"terminated"}, "cancel": {"cancelled", "compensating"}}


def add_args(name: str, p: argparse.ArgumentParser) -> None:
    """The options of a move beyond CLASS, ID, the server's and --json."""
    if name == "terminate":
        p.add_argument("--reason", default=None, help="why, kept as its error "
                       "('terminated by an operator: REASON')")
    elif name == "restart":
        g = p.add_mutually_exclusive_group()
        g.add_argument("--from-position", type=int, default=None, metavar="N",
                       help="from position N (as `workflow steps` numbers them), keeping "
                            "the results recorded before it and the run id")
        g.add_argument("--from-step", default=None, metavar="NAME",
                       help="from the position named NAME (its --occurrence-th), keeping "
                            "the results recorded before it and the run id")
        p.add_argument("--occurrence", type=int, default=1, metavar="N",
                       help="with --from-step: the Nth position of that name (default 1)")
        p.add_argument("--input", default=None, help="from the start only: a new input, "
                       "as JSON or @FILE (default: the instance's own)")
    elif name == "bulk":
        p.add_argument("action", metavar="ACTION", choices=MOVES,
                       help=f"one of {', '.join(MOVES)} (restart: from the start, each with "
                            "its own input)")
        p.add_argument("--status", dest="state", default=None, choices=STATES,
                       help="only instances in this state")
        p.add_argument("--since", default=None, metavar="TIME",
                       help="only instances updated at or after TIME (a time, or a span "
                            "back such as 2h: see `wkhost workflow list --help`)")
        p.add_argument("--until", default=None, metavar="TIME",
                       help="only instances updated at or before TIME")
        p.add_argument("--dry-run", action="store_true",
                       help="only list and count the instances it would act on; send nothing")
        p.add_argument("--reason", default=None, help="terminate: why (kept as its error)")


def move(admin: WorkflowAdmin, args: argparse.Namespace,
         json_arg: Callable[[str], Any]) -> Status:
    """The move `args.command` on CLASS/ID. Raises WorkflowError, CliError."""
    cls, id, name = args.cls, args.id, args.command
    if name == "terminate":
        return admin.terminate(cls, id, reason=args.reason)
    if name == "restart":
        return _restart(admin, args, json_arg)
    moves: dict[str, Callable[[str, str], Status]] = {
        "pause": admin.pause, "resume": admin.resume, "rescue": admin.rescue}
    return moves[name](cls, id)


def _restart(admin: WorkflowAdmin, args: argparse.Namespace,
             json_arg: Callable[[str], Any]) -> Status:
    if args.occurrence < 1:
        raise CliError("--occurrence must be 1 or more")
    if args.occurrence != 1 and args.from_step is None:
        raise CliError("--occurrence goes with --from-step")
    if args.input is not None and (args.from_step is not None
                                   or args.from_position is not None):
        raise CliError("--input goes with a restart from the start, not with --from-*: "
                       "the positions kept were made from the instance's input")
    if args.from_position is not None and args.from_position < 0:
        raise CliError("--from-position must be 0 or more")
    kw: dict[str, Any] = {} if args.input is None else {"input": json_arg(args.input)}
    return admin.restart(args.cls, args.id, from_position=args.from_position,
                         step=args.from_step, occurrence=args.occurrence, **kw)


def refused(name: str, s: Status) -> str | None:
    """Why the move did not do what it was asked (a terminate of a finished instance,
    which is left as it is), or None."""
    if name not in _DONE or s.state in _DONE[name]:
        return None
    return f"had already finished ({s.state}): not {name.removesuffix('e')}ed"


# -- bulk ------------------------------------------------------------------------------

def bulk(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    since, until = (None if t is None else parse_time(t, flag)
                    for t, flag in ((args.since, "--since"), (args.until, "--until")))
    rows = listing.select(admin, args.cls, status=args.state, since=since, until=until)
    if args.dry_run:
        return _dry(args, rows)
    if rows:  # the bulk's own line in the audit log, before its targets' (each recorded)
        filters = " ".join(f"{flag} {v}" for flag, v in (
            ("--status", args.state), ("--since", args.since), ("--until", args.until)) if v)
        audit.note(admin.base_url, admin.token,
                   f"bulk {args.action} {filters} ({len(rows)} instance(s))".replace("  ", " "),
                   args.cls)
    done: list[tuple[str, str]] = []
    failed: list[tuple[str, str]] = []
    for id, _ in rows:
        try:
            s = _one(admin, args, id)
        except WorkflowError as e:
            failed.append((id, str(e)))
            continue
        why = refused(args.action, s)
        (failed if why else done).append((id, why or s.state))
    if args.json:
        print(json.dumps({"action": args.action, "matched": len(rows),
                          "done": [{"id": i, "state": st} for i, st in done],
                          "failed": [{"id": i, "error": e} for i, e in failed]}))
    else:
        for id, state in done:
            print(f"{id}\t{state}")
        for id, error in failed:
            print(f"{id}\terror: {error}")
        print(f"{args.action}: {len(done)} of {len(rows)} instance(s) of {args.cls}"
              + (f", {len(failed)} failed" if failed else ""))
    if failed:
        print(f"wkhost: {args.cls}: {args.action} failed for {len(failed)} of {len(rows)} "
              "instance(s)", file=sys.stderr)
    return Exit.FAILED if failed else Exit.OK


def _one(admin: WorkflowAdmin, args: argparse.Namespace, id: str) -> Status:
    a = args.action
    if a == "terminate":
        return admin.terminate(args.cls, id, reason=args.reason)
    if a == "cancel":
        return admin.cancel(args.cls, id)
    moves: dict[str, Callable[[str, str], Status]] = {
        "pause": admin.pause, "resume": admin.resume, "rescue": admin.rescue,
        "restart": admin.restart}
    return moves[a](args.cls, id)


def _dry(args: argparse.Namespace, rows: list[tuple[str, dict[str, Any]]]) -> int:
    if args.json:
        print(json.dumps({"action": args.action, "dry_run": True, "matched": len(rows),
                          "ids": [i for i, _ in rows]}))
        return Exit.OK
    for id, s in rows:
        print(f"{id}\t{s.get('state')}")
    print(f"{args.action}: would act on {len(rows)} instance(s) of {args.cls} "
          "(dry run: nothing was sent)")
    return Exit.OK


