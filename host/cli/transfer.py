"""`wkhost workflow export` and `wkhost workflow import`: a live instance's whole state as a
file, and that file made an instance again, on another server or under another id.

    wkhost workflow export orders o6 > o6.json              # from one server
    wkhost workflow import o6.json --server http://b:8080   # goes on running there

The document is the runner's `export` route's (docs/workflow-protocol.md, "Export and
import"), with the build beside it: the sha256 of the component that served the class.
An import onto a server whose build of the class differs says so: the instance then
replays its journal with that build, and parks if it cannot.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from .client import WorkflowAdmin, WorkflowError
from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    exit_status_epilog,
    operator_token,
)

FORMAT = "wk-workflow-export/1"  # the runner's transfer_route.FORMAT


def add_commands(ws: Any) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    e = ws.add_parser(
        "export", help="write an instance's whole state as JSON: its journal, pending "
        "events, branches, parent and children, its own tables, its alarm and its build",
        description="Write an instance's whole state as one JSON document (read in a "
        "read-only event: the instance is not changed). `wkhost workflow import` makes it "
        "an instance again; the same file is a history the test kit replays.",
        epilog="example:\n  wkhost workflow export orders order-42 --leave-out customers "
        "> order-42.json\n\n" + exit_status_epilog("workflow export"), formatter_class=raw)
    e.add_argument("cls", metavar="CLASS", help="the workflow class, e.g. orders")
    e.add_argument("id", metavar="ID", help="the instance id, e.g. order-42")
    e.add_argument("--leave-out", action="append", default=[], metavar="TABLE",
                   help="leave this table's rows out, keeping its schema: for privacy "
                        "(repeatable)")
    e.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (default: "
                   "standard output)")
    add_server_args(e)
    e.set_defaults(run=_export)
    i = ws.add_parser(
        "import", help="make an instance of an exported document, on this server (it "
        "goes on running)",
        description="Make an instance of a document `wkhost workflow export` wrote: under "
        "its id (or --as ID) on the server, which must have no instance of that id. It "
        "goes on from where it was: a sleep or a backoff whose time has passed ends at "
        "once. Its parent and children stay as they were: a child still tells its parent "
        "(by class and id) when it ends.",
        epilog="example:\n  wkhost workflow import order-42.json --as order-42b --server "
        "http://127.0.0.1:8081\n\n" + exit_status_epilog("workflow import"),
        formatter_class=raw)
    i.add_argument("file", metavar="FILE", help="the exported document (JSON)")
    i.add_argument("--as", dest="as_id", metavar="ID", help="the new instance's id "
                   "(default: the exported one's)")
    i.add_argument("--class", dest="as_cls", metavar="CLASS", help="the class to make it "
                   "of (default: the exported one's)")
    i.add_argument("--json", action="store_true", help="print its status as JSON")
    add_server_args(i)
    i.set_defaults(run=_import)


def _export(args: argparse.Namespace) -> int:
    checked_target(args.cls, args.id)
    admin = WorkflowAdmin(args.server, operator_token(args))
    doc = _answer(f"{args.cls}/{args.id}",
                  lambda: admin.export(args.cls, args.id, leave_out=tuple(args.leave_out)))
    if isinstance(doc, int):
        return doc
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return Exit.OK


def _import(args: argparse.Namespace) -> int:
    doc = _document(args.file)
    actor = doc.get("actor") or {}
    cls, id = args.as_cls or actor.get("class"), args.as_id or actor.get("id")
    if not isinstance(cls, str) or not isinstance(id, str):
        raise CliError(f"{args.file} names no class and id: give --class and --as")
    checked_target(cls, id)
    admin = WorkflowAdmin(args.server, operator_token(args))
    builds = _answer(cls, admin.builds)
    if isinstance(builds, int):
        return builds
    if doc.get("build") and builds.get(cls) and builds[cls] != doc["build"]:
        print(f"wkhost: note: {args.file} was exported from build {doc['build'][:12]} of "
              f"its class; this server's {cls} is build {builds[cls][:12]}: the instance "
              "replays its journal with it, and parks if it cannot", file=sys.stderr)
    status = _answer(f"{cls}/{id}", lambda: admin.import_(doc, cls, id))
    if isinstance(status, int):
        return status
    if args.json:
        print(json.dumps(dataclasses.asdict(status), ensure_ascii=False, default=repr))
    else:
        print(f"{cls}/{id}: imported: {status.state}, {status.positions} positions")
    return Exit.OK


def _document(path: str) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise CliError(f"{path} is not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CliError(f"{path} is not a {FORMAT} document (`wkhost workflow export` "
                       "writes one)")
    return doc


def _answer(target: str, ask: Any) -> Any:
    """What `ask()` answers, or the exit code of its WorkflowError, said on stderr."""
    try:
        return ask()
    except WorkflowError as e:
        print(f"wkhost: {target}: {e}", file=sys.stderr)
        return Exit.UNREACHABLE if e.kind == "call" and e.status is None else Exit.FAILED
