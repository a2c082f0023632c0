"""`wkhost workflow ...`: start, follow, signal, cancel and list workflow instances.

Every command goes through the operator path of a running server (host/workflow_client),
so internal classes stay closed to the public. Values (inputs, payloads) are JSON on the
command line; `@FILE` reads them from a file. Exit codes: 0 ok, 1 the workflow said no
(unknown, finished, refused, unreachable), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .cli_options import add_server_args, operator_token
from .workflow_client import Status, WorkflowAdmin, WorkflowError


def add_workflow_command(sub: Any) -> None:
    w = sub.add_parser("workflow", help="start, follow, signal, cancel and list workflows",
                       description="Operate workflow instances on a running server.")
    ws = w.add_subparsers(title="workflow commands", metavar="COMMAND")
    for name, help_text in [("start", "start an instance (idempotent while it is kept)"),
                            ("status", "show an instance's status"),
                            ("send-event", "deliver an event to an instance"),
                            ("cancel", "cancel an instance"),
                            ("steps", "show an instance's recorded positions"),
                            ("list", "list the instances of a class")]:
        p = ws.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:])
        p.add_argument("cls", metavar="CLASS", help="the workflow class, e.g. orders")
        if name != "list":
            p.add_argument("id", metavar="ID", help="the instance id, e.g. order-42")
        _add_specific(name, p)
        add_server_args(p)
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
        p.set_defaults(run=_run, command=name)
    w.set_defaults(run=lambda args: (w.print_help(), 2)[1])


def _add_specific(name: str, p: argparse.ArgumentParser) -> None:
    if name == "start":
        p.add_argument("--input", default="null", help="the input, as JSON or @FILE")
        p.add_argument("--wait", action="store_true", help="follow it until it finishes")
        p.add_argument("--timeout", type=float, default=60.0, help="with --wait (seconds)")
    elif name == "status":
        p.add_argument("--wait", action="store_true", help="follow it until it finishes")
        p.add_argument("--timeout", type=float, default=60.0, help="with --wait (seconds)")
    elif name == "send-event":
        p.add_argument("name", metavar="EVENT", help="the event's name, e.g. approved")
        p.add_argument("--payload", default="null", help="the payload, as JSON or @FILE")
    elif name == "list":
        p.add_argument("--status", dest="state", default=None,
                       choices=["running", "waiting", "completed", "failed", "cancelled"],
                       help="only instances in this state")


def _json_arg(spec: str) -> Any:
    text = spec
    if spec.startswith("@"):
        try:
            text = Path(spec[1:]).read_text()
        except OSError as e:
            raise SystemExit(f"wkhost: error: cannot read {spec[1:]}: {e.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise SystemExit(f"wkhost: error: not JSON ({e}): {text[:80]!r}") from None


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "wait", False) and not args.timeout > 0:
        print("wkhost: error: --timeout must be a number of seconds above 0", file=sys.stderr)
        return 2
    admin = WorkflowAdmin(args.server, operator_token(args))
    try:
        return _dispatch(admin, args)
    except WorkflowError as e:
        print(f"wkhost: {args.cls}/{getattr(args, 'id', '')}: {e}", file=sys.stderr)
        return 1


def _dispatch(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    cmd, cls = args.command, args.cls
    if cmd == "list":
        rows = admin.list(cls, args.state)
        if args.json:
            print(json.dumps([{"id": i, **s} for i, s in rows], default=str))
        for actor_id, s in rows if not args.json else []:
            print(f"{actor_id}\t{s.get('state')}\t{s.get('positions', 0)} positions")
        return 0
    if cmd == "steps":
        steps = admin.steps(cls, args.id)
        if args.json:
            print(json.dumps(steps, default=str))
        else:
            _print_steps(steps)
        return 0
    if cmd == "send-event":
        admin.send_event(cls, args.id, args.name, _json_arg(args.payload))
        print(f"{cls}/{args.id}: event {args.name!r} recorded")
        return 0
    wait = args.timeout if getattr(args, "wait", False) else 0
    status = {"start": lambda: admin.start(cls, args.id, _json_arg(args.input), wait=wait),
              "status": lambda: admin.status(cls, args.id, wait=wait),
              "cancel": lambda: admin.cancel(cls, args.id)}[cmd]()
    if wait:
        status = _follow(admin, cls, args.id, status, args.timeout)
    _print_status(cls, args.id, status, args.json)
    return 0 if status.state != "failed" else 1


def _follow(admin: WorkflowAdmin, cls: str, actor_id: str, status: Status,
            timeout: float) -> Status:
    """Ask again while it has not finished: each answer is held by the host until the
    instance finishes or the wait is up (at most 120 s a request)."""
    end = time.monotonic() + timeout
    while not status.is_finished and (left := end - time.monotonic()) > 0:
        status = admin.status(cls, actor_id, wait=left)
    return status


def _print_status(cls: str, actor_id: str, s: Status, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"state": s.state, "wake_at": s.wake_at,
                          "waiting_for": list(s.waiting_for), "output": s.output,
                          "error": s.error, "positions": s.positions, "run_id": s.run_id},
                         default=repr))
        return
    line = f"{cls}/{actor_id}: {s.state}, {s.positions} positions"
    if s.waiting_for:
        line += f", waiting for {', '.join(s.waiting_for)}"
    if s.wake_at is not None:
        line += f", wakes at {_when(s.wake_at)}"
    print(line)
    if s.output is not None:
        print(f"  output: {json.dumps(s.output, default=repr)}")
    if s.error:
        print(f"  error: {s.error}")


def _print_steps(steps: list[dict[str, Any]]) -> None:
    print(f"{'pos':>4}  {'kind':<6} {'name':<24} {'state':<10} {'tries':>5}  detail")
    for st in steps:
        detail = st.get("error") or ""
        for key in ("wake_at", "next_attempt_at"):
            if st.get(key):
                detail = f"{key.replace('_', ' ')} {_when(st[key])} {detail}".strip()
        print(f"{st.get('pos', ''):>4}  {st.get('kind', ''):<6} {str(st.get('name', ''))[:24]:<24} "
              f"{st.get('state', ''):<10} {st.get('attempts', 0):>5}  {detail}")


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
