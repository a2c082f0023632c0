"""`wkhost workflow compat CLASS NEW.wasm`: before a deploy, would the new build replay
each live instance of the class on the server?

Each live instance (running, waiting, sleeping, paused, parked, compensating), and the
newest finished ones (`--finished N`), is exported (a read-only event: nothing of the
live instances changes) and replayed dry against the new build in a server of the
report's own, on copies: no step, fetch or call runs (host/testkit/compat.py has the
verdicts). The verdicts are a snapshot: an instance that moves on afterwards may change
its answer, so a deploy checks again at the moment it moves one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
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

FINISHED = ("completed", "failed", "cancelled", "terminated")


def add_command(ws: Any) -> None:
    p = ws.add_parser(
        "compat", help="before a deploy: would a new build replay each live instance of "
        "a class? (a dry replay of copies: nothing runs)",
        description=(__doc__ or "").split("\n\n", 1)[1].strip(),
        epilog="example:\n  wkhost workflow compat orders orders-v2.wasm --json\n\n"
        + exit_status_epilog("workflow compat"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cls", metavar="CLASS", help="the workflow class, e.g. orders")
    p.add_argument("wasm", metavar="NEW.wasm", help="the new build of the class")
    p.add_argument("--finished", type=int, default=100, metavar="N",
                   help="also check the N newest finished instances (a different result "
                        "on replay); 0 for none (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_server_args(p)
    p.set_defaults(run=_compat)


def _compat(args: argparse.Namespace) -> int:
    from ..testkit.compat import Verdict, replay_exports

    checked_target(args.cls)
    wasm = Path(args.wasm)
    if wasm.suffix != ".wasm" or not wasm.is_file():
        raise CliError(f"{args.wasm}: give the new build's component (.wasm)")
    if args.finished < 0:
        raise CliError("--finished takes 0 or more")
    admin = WorkflowAdmin(args.server, operator_token(args))
    began = time.monotonic()
    try:
        ids = _chosen(admin, args.cls, args.finished)
        print(f"compat: {len(ids)} instances of {args.cls} to replay against {wasm.name}",
              file=sys.stderr)
        verdicts = replay_exports(args.cls, wasm, _exports(admin, args.cls, ids),
                                  progress=lambda v: print(f"  {_line(v)}", file=sys.stderr))
    except WorkflowError as e:
        print(f"wkhost: {args.cls}: {e}", file=sys.stderr)
        return Exit.UNREACHABLE if e.kind == "call" and e.status is None else Exit.FAILED
    bad: list[Verdict] = [v for v in verdicts if not v.ok]
    seconds = time.monotonic() - began
    if args.json:
        print(json.dumps({"class": args.cls, "build": str(wasm), "ok": not bad,
                          "instances": [v.doc() for v in verdicts],
                          "seconds": round(seconds, 3)}, indent=1, default=repr))
    else:
        print(f"{args.cls} with {wasm.name}: {len(verdicts)} instances, "
              f"{len(verdicts) - len(bad)} replay, {len(bad)} would not ({seconds:.1f} s)")
        for v in bad:
            print(_line(v))
        print("(a snapshot: an instance that moves on may change its answer)")
    return Exit.FAILED if bad else Exit.OK


def _chosen(admin: WorkflowAdmin, cls: str, finished: int) -> list[str]:
    """The live instances, then the `finished` newest finished ones."""
    listed = admin.list(cls)
    live = [i for i, s in listed if s["state"] not in FINISHED]
    done = sorted(((s.get("updated_at") or 0, i) for i, s in listed
                   if s["state"] in FINISHED), reverse=True)[:finished]
    return live + [i for _, i in done]


def _exports(admin: WorkflowAdmin, cls: str, ids: list[str]) -> Iterator[dict[str, Any]]:
    for id in ids:
        try:
            yield admin.export(cls, id)
        except WorkflowError as e:
            if e.kind != "unknown":  # gone since the listing (its retention): left out
                raise


def _line(v: Any) -> str:
    head = f"{v.id}: {v.verdict} ({v.state}, {v.positions} positions)"
    return f"{head}: {v.detail}" if v.detail else head
