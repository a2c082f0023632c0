"""`wkhost workflow ...`: start, follow, signal, cancel and list workflow instances (and,
in modules of their own, export, import and compat). Every command goes through the
operator path of a running server (host/cli/client.py), so internal classes stay closed
to the public. Values (inputs, payloads) are JSON on the command line; `@FILE` reads
them from a file. Exit codes follow the contract in host/cli/options.py (docs/cli.md):
start and status exit with the code of the state they print."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from typing import Any

from . import actors, compat, listing, operate, steps, transfer, update_cmd
from .client import Started, Status, WorkflowAdmin, WorkflowError
from .options import (
    STATE_EXITS,
    CliError,
    Exit,
    add_server_args,
    checked_target,
    exit_status_epilog,
    json_arg,
    operator_token,
)
from .status_text import print_status, say_if_input_ignored
from .text import seconds_arg, when

_COMMANDS = [
    ("start", "start an instance (idempotent while it is kept)",
     "wkhost workflow start orders order-42 --input '{\"item\": \"book\"}' --wait --timeout 30"),
    ("status", "show an instance's status", "wkhost workflow status orders order-42 --wait"),
    ("send-event", "deliver an event to an instance",
     "wkhost workflow send-event orders order-42 approved --payload '{\"by\": \"ann\"}'"),
    ("cancel", "cancel an instance", "wkhost workflow cancel orders order-42 --compensate"),
    ("steps", "show an instance's recorded positions", "wkhost workflow steps orders order-42"),
    ("list", "list the instances of a class", "wkhost workflow list orders --status waiting "
     "--label region=eu --since 2h --order newest --limit 20"),
    ("events", "show the events an instance emitted", "wkhost workflow events orders order-42 "
     "--after 10"),
    ("query", "ask an instance's query handler", "wkhost workflow query orders order-42 "
     "progress '{\"detail\": true}'"),
    ("terminate", "stop an instance at once, running no compensation (its children not "
     "detached are terminated too)",
     "wkhost workflow terminate orders order-42 --reason 'duplicate order'"),
    ("pause", "pause an instance: it starts no new work and still records the events sent "
     "to it (`resume` goes on)", "wkhost workflow pause orders order-42"),
    ("resume", "resume a paused instance where it stopped",
     "wkhost workflow resume orders order-42"),
    ("rescue", "run a parked or failed instance again from its failing position, under "
     "the code now deployed (a failed one's last failed step gets fresh attempts; refused "
     "once its compensations have run: restart it)", "wkhost workflow rescue orders order-42"),
    ("restart", "run an instance again from the start (a new run id; same input unless "
     "--input) or from a step (--from-step NAME [--occurrence N], --from-position N), "
     "keeping the results recorded before it",
     "wkhost workflow restart orders order-42 --from-step charge"),
    ("bulk", "do one of terminate, pause, resume, rescue, restart, cancel to every instance "
     "of a class that a filter selects (--dry-run only counts them)",
     "wkhost workflow bulk orders rescue --status parked --since 2026-12-01T18:00:00Z "
     "--dry-run"),
]


def add_workflow_command(sub: Any) -> None:
    w = sub.add_parser("workflow", help="start, follow, signal, cancel and list workflows",
                       description="Operate workflow instances on a running server.",
                       epilog="Run `wkhost workflow COMMAND --help` for its options and "
                              "exit codes (docs/cli.md).")
    ws = w.add_subparsers(title="workflow commands", metavar="COMMAND")
    for name, help_text, example in _COMMANDS:
        p = ws.add_parser(name, help=help_text,
                          description=textwrap.fill(help_text[0].upper() + help_text[1:], 88),
                          epilog=f"example:\n  {example}\n\n"
                                 + exit_status_epilog(f"workflow {name}"),
                          formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("cls", metavar="CLASS", help="the workflow class, e.g. orders")
        if name not in ("list", "bulk"):
            p.add_argument("id", metavar="ID", help="the instance id, e.g. order-42")
        _add_specific(name, p)
        add_server_args(p)
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
        p.set_defaults(run=_run, command=name)
    transfer.add_commands(ws)
    compat.add_command(ws)
    update_cmd.add_command(ws).set_defaults(run=_run, command="update")
    w.set_defaults(run=lambda args: (w.print_help(), Exit.USAGE)[1])


def _add_specific(name: str, p: argparse.ArgumentParser) -> None:
    wait_help = ("wait until it finishes (or fails, or is cancelled) or parks: one "
                 "request the host holds, asked again every 120 s")
    timeout_help = ("with --wait: give up after this long (seconds, or a duration: 5m, "
                    "\"2 hours\"), print the status then and exit 4 (default %(default)g s)")
    if name == "start":
        p.add_argument("--input", default="null", help="the input, as JSON or @FILE (default "
                       "null). An instance that exists keeps its own: a different one is "
                       "ignored, with a line on stderr")
        actors.add_start_labels(p)
    if name == "status":
        p.add_argument("--held-by", action="store_true",
                       help="also say who runs it now (the host's process: 'held by "
                            "process 2 of 4 (pid 1234)' on the status line)")
    if name in ("start", "status"):
        p.add_argument("--wait", action="store_true", help=wait_help)
        p.add_argument("--timeout", type=seconds_arg, default=60.0, metavar="SECONDS",
                       help=timeout_help)
    elif name == "send-event":
        p.add_argument("name", metavar="EVENT", help="the event's name, e.g. approved")
        p.add_argument("--payload", default="null", help="the payload, as JSON or @FILE")
    elif name == "events":
        p.add_argument("--after", type=int, default=0, metavar="N",
                       help="skip the first N events: show from offset N (default 0)")
    elif name == "query":
        p.add_argument("name", metavar="NAME", help="the query's name, e.g. progress")
        p.add_argument("arg", metavar="ARG-JSON", nargs="?", default="null",
                       help="the query's argument, as JSON or @FILE (default null)")
    elif name == "cancel":
        p.add_argument("--compensate", action="store_true",
                       help="run the compensations of its completed steps first, newest "
                            "first (it is compensating, then cancelled: follow it with "
                            "`workflow status --wait`); a parked instance is cancelled at "
                            "once, compensating nothing")
    elif name == "list":
        listing.add_args(p)
    elif name == "steps":
        steps.add_args(p)
    elif name in _MOVES or name == "bulk":
        operate.add_args(name, p)


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "wait", False) and not args.timeout > 0:
        raise CliError("--timeout must be a number of seconds above 0")
    actor_id = getattr(args, "id", None)
    checked_target(args.cls, actor_id)
    admin = WorkflowAdmin(args.server, operator_token(args))
    try:
        return _dispatch(admin, args)
    except WorkflowError as e:
        target = args.cls if actor_id is None else f"{args.cls}/{actor_id}"
        print(f"wkhost: {target}: {e}", file=sys.stderr)
        # "call" with no status: no answer came at all (connection refused, a timeout).
        return Exit.UNREACHABLE if e.kind == "call" and e.status is None else Exit.FAILED


def _dispatch(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    return _RUN[args.command](admin, args)


def _send_event(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    admin.send_event(args.cls, args.id, args.name, json_arg(args.payload))
    print(f"{args.cls}/{args.id}: event {args.name!r} recorded")
    return Exit.OK


def _cancel(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    status = admin.cancel(args.cls, args.id, compensate=args.compensate)
    print_status(args.cls, args.id, status, args.json)
    # compensating: the cancel is under way (or its own failure's compensations are).
    if status.state == "cancelled" or (args.compensate and status.state == "compensating"):
        return Exit.OK
    print(f"wkhost: {args.cls}/{args.id}: had already finished ({status.state}): "
          "not cancelled", file=sys.stderr)
    return Exit.FAILED


def _start_or_status(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    cls, actor_id = args.cls, args.id
    # The deadline counts from before the first request: that request waits too.
    deadline = time.monotonic() + args.timeout if args.wait else None
    wait = args.timeout if args.wait else 0
    first: Status
    if args.command == "start":
        first = admin.start(cls, actor_id, json_arg(args.input), wait=wait,
                            labels=actors.start_labels(args.label), **actors.with_start(
                                args, json_arg(args.payload), json_arg(args.arg)))
    else:
        first = admin.status(cls, actor_id, wait=wait, held_by=args.held_by)
    if isinstance(first, Started) and first.update is not None:  # update-with-start:
        # --wait waits for the update's end
        return update_cmd.after_start(admin, args, first, deadline)
    status = first if deadline is None else _follow(admin, cls, actor_id, first, deadline,
                                                    getattr(args, "held_by", False))
    started = first if isinstance(first, Started) else None
    print_status(cls, actor_id, status, args.json, started)
    if started is not None:
        say_if_input_ignored(cls, actor_id, started)
    if deadline is not None and not _ended(status):
        print(f"wkhost: {cls}/{actor_id}: timed out: not finished after --timeout "
              f"{args.timeout:g} s (it is {status.state})", file=sys.stderr)
        return Exit.TIMED_OUT
    return STATE_EXITS.get(status.state, Exit.OK)


def _events(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    if args.after < 0:
        raise CliError("--after must be 0 or more")
    events = admin.events(args.cls, args.id, after=args.after)
    if args.json:
        print(json.dumps([vars(e) for e in events], default=repr))
    for e in events if not args.json else []:
        print(f"{e.offset:>4}  {when(e.at)}  {e.name}  {json.dumps(e.payload, default=repr)}")
    return Exit.OK


def _query(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    result = admin.query(args.cls, args.id, args.name, json_arg(args.arg))
    print(json.dumps(result, default=repr))
    return Exit.OK


def _move(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    status = operate.move(admin, args, json_arg)
    print_status(args.cls, args.id, status, args.json)
    why = operate.refused(args.command, status)
    if why is not None:
        print(f"wkhost: {args.cls}/{args.id}: {why}", file=sys.stderr)
        return Exit.FAILED
    return Exit.OK


_MOVES = ("terminate", "pause", "resume", "rescue", "restart")
_RUN = {**dict.fromkeys(_MOVES, _move), "bulk": operate.bulk, "list": listing.run,
        "steps": steps.run, "send-event": _send_event, "cancel": _cancel,
        "start": _start_or_status, "status": _start_or_status, "events": _events,
        "query": _query, "update": update_cmd.run}


def _ended(s: Status) -> bool:
    """Where a wait ends: a resting state (finished, parked), or one that has an exit
    code of its own."""
    return s.is_resting or s.state in STATE_EXITS


def _follow(admin: WorkflowAdmin, cls: str, actor_id: str, status: Status,
            deadline: float, held_by: bool = False) -> Status:
    """Ask again while it has not ended and time is left: each answer is held by the
    host until the instance finishes or the wait is up (at most 120 s a request)."""
    while not _ended(status) and (left := deadline - time.monotonic()) >= 0.001:
        status = admin.status(cls, actor_id, wait=left, held_by=held_by)
    return status
