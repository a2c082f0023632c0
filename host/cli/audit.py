"""`wkhost audit`: the operator actions a running server recorded, newest first.

Each line: when it came (host clock, UTC), the action, its target, the answer's status,
the instance's state after (or -), the one-line result, and the client's note, if any.
`--json` prints the route's answer as it is (`entries`, `next`). A full page ends with a
line on stderr giving the option for the next one (`--before CURSOR`).

`note(...)` records a line of a client's own, as a bulk operation does for itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from textwrap import fill
from typing import Any
from urllib.parse import urlencode

from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    operator_request,
    operator_token,
    with_exit_codes,
)
from .text import TIME_HELP, parse_time, when

__all__ = ["add_audit", "line", "note", "parse_time"]

_EPILOG = """\
examples:
  wkhost audit                              the last 50 actions
  wkhost audit --since 2h                   those of the last two hours (host clock)
  wkhost audit --target orders/order-42     those on one instance
  wkhost audit --target orders --action terminate --json
  wkhost audit --before 1764633057123.42    the page after one that ended there

{time_help}
Reads (status, steps, list, events, query) are not actions: they are not recorded.
Actions the CLI names otherwise: send-event is recorded as `event`."""

_ALIASES = {"send-event": "event"}


def add_audit(sub: Any) -> None:
    """Register `wkhost audit`."""
    a = sub.add_parser("audit", help="show the operator actions a server recorded",
                       description="Show the operator actions a running server recorded "
                                   "(start, send-event, cancel, terminate, ...), newest "
                                   "first, refusals included.",
                       epilog=_EPILOG.format(time_help=fill(TIME_HELP, 88)),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    with_exit_codes(a, "audit")
    a.add_argument("--since", metavar="TIME", help="only actions at or after TIME")
    a.add_argument("--until", metavar="TIME", help="only actions at or before TIME")
    a.add_argument("--target", metavar="CLASS[/ID]",
                   help="only actions on this class, or on this one instance")
    a.add_argument("--action", metavar="ACTION",
                   help="only this action: start, event (send-event), cancel, terminate, "
                        "note, ...")
    a.add_argument("--limit", type=int, default=50, metavar="N",
                   help="show at most N, 1 to 1000 (default %(default)s)")
    a.add_argument("--before", metavar="CURSOR",
                   help="show the page that follows the one whose cursor this is")
    a.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_server_args(a)
    a.set_defaults(run=run_audit)


def run_audit(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 1000:
        raise CliError("--limit takes 1 to 1000")
    query = _query(args)
    url = f"{args.server.rstrip('/')}/_wk/audit?{urlencode(query)}"
    answer = operator_request("GET", url, operator_token(args))
    if answer.status != 200:
        print(f"wkhost: audit: {answer.body.decode(errors='replace').strip()}",
              file=sys.stderr)
        return Exit.FAILED
    doc = json.loads(answer.body)
    if args.json:
        print(json.dumps(doc))
    for e in doc["entries"] if not args.json else []:
        print(line(e))
    for process in doc.get("unflushed") or []:
        print(f"wkhost: process {process} did not answer: its latest actions may be "
              "missing", file=sys.stderr)
    if doc.get("next"):
        print(f"wkhost: --limit {args.limit} reached; older actions: --before "
              f"{doc['next']}", file=sys.stderr)
    return Exit.OK


def line(e: dict[str, Any]) -> str:
    """One entry as `wkhost audit` prints it."""
    out = (f"{when(e['at'])}  {e.get('who') or '-':<8} {e['action']:<10} "
           f"{e['target'] or '(host)':<24} {e['status']}  {e['state'] or '-':<12} "
           f"{e['result']}")
    return f"{out}  [{e['note']}]" if e.get("note") else out


def _query(args: argparse.Namespace) -> dict[str, str]:
    q: dict[str, str] = {"limit": str(args.limit)}
    if args.target:
        cls, _, actor_id = args.target.partition("/")
        checked_target(cls, actor_id or None)
        q["target"] = args.target
    for name in ("since", "until"):
        if getattr(args, name) is not None:
            q[name] = str(parse_time(getattr(args, name), f"--{name}"))
    if args.action:
        q["action"] = _ALIASES.get(args.action, args.action)
    if args.before:
        q["before"] = args.before
    return q


def note(server: str, token: str, text: str, target: str = "") -> None:
    """Record a line of the client's own (the action "note") on `target` (CLASS or
    CLASS/ID): what a bulk operation says of itself. Raises CliError if refused."""
    body = json.dumps({"note": text, "target": target}).encode()
    answer = operator_request("POST", f"{server.rstrip('/')}/_wk/audit/note", token, body)
    if answer.status != 200:
        raise CliError(f"the audit note was refused: {answer.body.decode(errors='replace')}",
                       Exit.FAILED)
