"""`wkhost schedule create|list|describe|pause|resume|delete`: the schedules of a server
served with `wkhost serve --schedules` (guest_sdk/wkguest/schedule/).

Each schedule is one actor of the schedule class (`--class`, default schedules), its id
the schedule's name; every command is one operator request to it (wk-schedule/v1, JSON),
and `list` asks the host which actors of the class exist, then each one. Exit codes:
the contract in host/cli/options.py (docs/cli.md); a refusal (an unknown schedule, a
create of one that exists, a bad spec) exits 1 with the schedule's own message.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import quote

from wkguest.schedule.target import NOT_SERVED
from wkguest.workflow.errors import WorkflowError

from .client import WorkflowAdmin
from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    json_arg,
    operator_request,
    operator_token,
    with_exit_codes,
)
from .text import seconds_arg, when

PREFIX = "/wk-schedule/v1/"
_COMMANDS = [
    ("create", "define a schedule that starts instances of a workflow class",
     "wkhost schedule create nightly reports '0 3 * * *' --input '{\"full\": true}' "
     "--overlap skip --catchup one"),
    ("list", "list the schedules", "wkhost schedule list"),
    ("describe", "show a schedule: its definition, next fire times and last fires",
     "wkhost schedule describe nightly"),
    ("pause", "fire nothing until resumed", "wkhost schedule pause nightly"),
    ("resume", "fire again, from the next fire time after now (no catch-up of the "
     "pause)", "wkhost schedule resume nightly"),
    ("delete", "delete a schedule (the instances it started are left as they are)",
     "wkhost schedule delete nightly"),
]


class Refused(Exception):
    """The schedule answered with an error: its kind, message and status."""

    def __init__(self, kind: str, message: str, status: int) -> None:
        super().__init__(message)
        self.kind, self.status = kind, status


def add_schedule(sub: Any) -> None:
    """Register `wkhost schedule` and its commands."""
    s = sub.add_parser("schedule", help="cron-like schedules that start workflow instances",
                       description="Operate the schedules of a server served with "
                                   "`wkhost serve --schedules`.",
                       epilog="Run `wkhost schedule COMMAND --help` for its options and "
                              "exit codes (docs/cli.md).")
    ss = s.add_subparsers(title="schedule commands", metavar="COMMAND")
    for name, help_text, example in _COMMANDS:
        p = ss.add_parser(name, help=help_text, description=help_text[0].upper()
                          + help_text[1:] + ".", epilog=f"example:\n  {example}")
        with_exit_codes(p, f"schedule {name}")
        if name != "list":
            p.add_argument("name", metavar="NAME", help="the schedule's name, e.g. nightly")
        if name == "create":
            _add_create_args(p)
        if name == "describe":
            p.add_argument("--fires", type=int, default=20, metavar="N",
                           help="show its newest N fires, 0 to 100 (default %(default)s)")
        p.add_argument("--class", dest="cls", default="schedules", metavar="CLASS",
                       help="the schedule class, as `serve --schedules` named it "
                            "(default %(default)s)")
        add_server_args(p)
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
        p.set_defaults(run=_run, command=name)
    s.set_defaults(run=lambda args: (s.print_help(), Exit.USAGE)[1])


def _add_create_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="CLASS", help="the workflow class it starts, e.g. reports")
    p.add_argument("cron", metavar="CRON", help="five fields: minute hour day-of-month "
                   "month day-of-week, e.g. '0 3 * * *' (or @hourly, @daily, @weekly, "
                   "@monthly, @yearly)")
    p.add_argument("--input", default="null",
                   help="each instance's input, as JSON or @FILE (default null)")
    p.add_argument("--tz", default="UTC",
                   help="UTC (default) or a fixed offset such as +01:00: a component has no "
                        "tz database, so named zones are refused, and an offset does not "
                        "follow daylight saving")
    p.add_argument("--overlap", choices=("skip", "allow"), default="skip",
                   help="skip: no start while the last instance it started is unfinished; "
                        "allow: start anyway (default %(default)s)")
    p.add_argument("--catchup", choices=("none", "one", "all"), default="one",
                   help="fire times found past by more than --grace (the server was down): "
                        "start none, the newest one, or all up to --catchup-max "
                        "(default %(default)s)")
    p.add_argument("--catchup-max", type=int, default=10, metavar="N",
                   help="with --catchup all: at most N of them, the newest (1 to 1000; "
                        "default %(default)s)")
    p.add_argument("--grace", type=seconds_arg, default=60.0, metavar="SECONDS",
                   help="a fire time at most this late is on time, and always starts: "
                        "seconds, or a duration such as 5m or \"1 hour\" (default "
                        "%(default)g s)")


def _run(args: argparse.Namespace) -> int:
    checked_target(args.cls, getattr(args, "name", None))
    token = operator_token(args)
    try:
        if args.command == "list":
            return _list(args, token)
        return _RUN[args.command](args, token)
    except Refused as e:
        where = f"schedule {getattr(args, 'name', '')}".rstrip()
        print(f"wkhost: {where}: {e}", file=sys.stderr)
        return Exit.FAILED


def call(args: argparse.Namespace, token: str, name: str, route: str,
         msg: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request to schedule `name`: its answer, or Refused."""
    url = (f"{args.server.rstrip('/')}/{quote(args.cls, safe='')}/{quote(name, safe='')}"
           f"{PREFIX}{route}")
    answer = operator_request("POST", url, token, json.dumps(msg or {}).encode())
    try:
        doc = json.loads(answer.body)
    except ValueError:
        doc = None
    if answer.status == 200 and isinstance(doc, dict):
        return doc
    if isinstance(doc, dict) and "message" in doc:
        raise Refused(str(doc.get("error")), str(doc["message"]), answer.status)
    text = answer.body[:300].decode("utf-8", "replace").strip()
    raise Refused("host", f"the server answered {answer.status}: {text}"
                  + _hint(answer.status, args.cls), answer.status)


def _hint(status: int, cls: str) -> str:
    if status == 404:
        return (f" (is the server serving the schedule class {cls!r}? `wkhost serve "
                "--schedules`)")
    return ""


def _create(args: argparse.Namespace, token: str) -> int:
    if not args.grace >= 0:
        raise CliError("--grace must be 0 or more seconds")
    msg = {"target": args.target, "cron": args.cron, "tz": args.tz,
           "input": json_arg(args.input, "--input"),
           "overlap": args.overlap, "catchup": args.catchup, "catchup_max": args.catchup_max,
           "grace_ms": round(args.grace * 1000)}
    try:
        doc = call(args, token, args.name, "create", msg)
    except Refused as e:
        if e.kind != NOT_SERVED:
            raise
        raise Refused(e.kind, f"{e}{_served(args.server, token)}", e.status) from None
    if args.json:
        print(json.dumps(doc))
        return Exit.OK
    nxt = doc.get("next_fires") or []
    print(f"schedule {doc['name']}: starts {doc['target']} on {doc['cron']!r} ({doc['tz']})"
          + (f", first at {when(nxt[0])}" if nxt else ""))
    return Exit.OK


def _served(server: str, token: str) -> str:
    """What the server serves, to add to a refusal of a target it does not; "" if it
    does not say."""
    try:
        answer = operator_request("GET", f"{server.rstrip('/')}/_wk/health", token)
        classes = json.loads(answer.body)["classes"]
    except (CliError, ValueError, KeyError, TypeError):
        return ""
    return f" (this server serves: {', '.join(map(str, classes))})"


def _describe(args: argparse.Namespace, token: str) -> int:
    if not 0 <= args.fires <= 100:
        raise CliError("--fires takes 0 to 100")
    doc = call(args, token, args.name, "describe", {"fires": args.fires})
    if args.json:
        print(json.dumps(doc))
    else:
        print("\n".join(describe_lines(doc)))
    return Exit.OK


def describe_lines(d: dict[str, Any]) -> list[str]:
    """A schedule's describe answer as text."""
    catchup = d["catchup"] + (f" (at most {d['catchup_max']})" if d["catchup"] == "all" else "")
    lines = [f"{d['name']}: starts {d['target']} on {d['cron']!r} ({d['tz']}), "
             + ("paused" if d["paused"] else "active"),
             f"  overlap {d['overlap']}, catch-up {catchup}, grace {d['grace_ms'] / 1000:g} s",
             f"  input: {json.dumps(d['input'])}",
             "  next: " + (", ".join(when(t) for t in d["next_fires"]) or "none"),
             f"  started {d['started']}, skipped {d['skipped']}, missed {d['missed']}, "
             f"failed {d['failed']}; last instance {d['last_instance'] or 'none'}"]
    if d.get("fires"):
        lines.append("  fires (newest first):")
    for f in d.get("fires") or []:
        note = f"  {f['note']}" if f.get("note") else ""
        lines.append(f"    {when(f['fire_at'])}  {f['instance']}  {f['outcome']}{note}")
    return lines


def _change(args: argparse.Namespace, token: str) -> int:
    doc = call(args, token, args.name, args.command)
    if args.json:
        print(json.dumps(doc))
    elif args.command == "delete":
        print(f"schedule {args.name}: deleted (the instances it started are left as they are)")
    else:
        nxt = doc.get("next_fires") or []
        print(f"schedule {args.name}: " + ("paused" if doc["paused"] else "active")
              + (f", next at {when(nxt[0])}" if nxt else ""))
    return Exit.OK


def _list(args: argparse.Namespace, token: str) -> int:
    try:
        ids = WorkflowAdmin(args.server, token).ids(args.cls)
    except WorkflowError as e:
        if e.kind == "call" and e.status is None:
            raise CliError(f"cannot reach {args.server}: {e}", Exit.UNREACHABLE) from None
        raise Refused(e.kind, f"{e}{_hint(e.status or 0, args.cls)}", e.status or 0) from None
    docs = []
    for name in ids:
        try:
            docs.append(call(args, token, name, "describe", {"fires": 0}))
        except Refused as e:
            if e.kind != "unknown":  # gone since the host listed it
                raise
    if args.json:
        print(json.dumps(docs))
    for d in docs if not args.json else []:
        nxt = d["next_fires"]
        print("\t".join([d["name"], d["target"], repr(d["cron"]), d["tz"],
                         "paused" if d["paused"] else "active",
                         f"next {when(nxt[0])}" if nxt else "next none",
                         f"last {d['last_instance'] or 'none'}"]))
    return Exit.OK


_RUN = {"create": _create, "describe": _describe, "pause": _change, "resume": _change,
        "delete": _change}
