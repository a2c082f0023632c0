"""`wkhost workflow steps`: an instance's recorded positions, as a table or JSON; with
`--attempts`, each position's attempts (start, duration, outcome, error, fuel, memory
grown; under each that raised, its traceback), those before each restart that removed it
first, and with `--values`, each one's recorded value, cut at `--value-bytes`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .client import WorkflowAdmin
from .options import CliError, Exit
from .text import when

DEFAULT_VALUE_BYTES = 200
MAX_VALUE_BYTES = 4096  # the steps route's cap (wkguest.workflow.attempts)
_PAGE = 100  # positions a page with their histories: the route's most


def add_args(p: argparse.ArgumentParser) -> None:
    """The options of `workflow steps` beyond CLASS, ID, the server's and --json."""
    p.add_argument("--attempts", action="store_true",
                   help="each position's attempts: when each began, how long it took, how "
                        "it ended (returned, failed, cut) and why, the fuel it burnt, "
                        "the memory it grew, and the traceback of each that raised; "
                        "first, those a restart from a step took away")
    p.add_argument("--values", action="store_true",
                   help="each position's recorded value (its JSON), cut at --value-bytes")
    p.add_argument("--value-bytes", type=int, default=DEFAULT_VALUE_BYTES, metavar="N",
                   help=f"with --values: cut each value at N bytes (1 to {MAX_VALUE_BYTES}, "
                        "default %(default)s)")


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    if not 1 <= args.value_bytes <= MAX_VALUE_BYTES:
        raise CliError(f"--value-bytes must be from 1 to {MAX_VALUE_BYTES}, not "
                       f"{args.value_bytes}")
    opts: dict[str, Any] = {}
    if args.attempts:
        opts["attempts"] = True
    if args.values:
        opts.update(values=True, value_bytes=args.value_bytes)
    steps = _fetch(admin, args.cls, args.id, opts) if opts else admin.steps(args.cls, args.id)
    if args.json:
        print(json.dumps(steps, default=str))
    else:
        _print_steps(steps)
    return Exit.OK


def _fetch(admin: WorkflowAdmin, cls: str, id: str, opts: dict[str, Any]
           ) -> list[dict[str, Any]]:
    """Every position with the route's additions `opts`, page by page."""
    out: list[dict[str, Any]] = []
    nxt: int | None = 0
    while nxt is not None:
        page = admin._call(cls, id, "steps", {"from": nxt, "limit": _PAGE, **opts})
        out.extend(page.get("steps") or [])
        nxt = page.get("next")
    return out


def _print_steps(steps: list[dict[str, Any]]) -> None:
    # As wide as the longest name (a group's names its branches), within 24 to 48.
    w = min(max([24, *(len(str(st.get("name", ""))) for st in steps)]), 48)
    print(f"{'pos':>4}  {'kind':<6} {'name':<{w}} {'state':<10} {'tries':>5}  detail")
    for st in steps:
        row = (f"{st.get('pos', ''):>4}  {st.get('kind', ''):<6} "
               f"{str(st.get('name', ''))[:w]:<{w}} {st.get('state', ''):<10} "
               f"{st.get('attempts', 0):>5}  {_detail(st)}")
        print(row.rstrip())
        _print_earlier(st)
        for a in st.get("history") or []:
            _print_attempt(a, 6)
        if st.get("history_more"):
            print(f"{'':>6}({st['history_more']} earlier attempts not shown)")
        if "value" in st and st["value"] is not None:
            more = " ..." if st.get("value_truncated") else ""
            print(f"{'':>6}value {st['value']}{more}")


def _print_earlier(st: dict[str, Any]) -> None:
    """The attempts restarts and rescues took from the position, under the move that did."""
    if st.get("earlier_more"):
        print(f"{'':>6}({st['earlier_more']} older attempts from before restarts or rescues "
              "not shown)")
    moved = None
    for a in st.get("earlier") or []:
        if a.get("moved_at") != moved:
            moved = a.get("moved_at")
            print(f"{'':>6}before the {a.get('move', 'restart')} at {when(moved)}:")
        _print_attempt(a, 8)


def _print_attempt(a: dict[str, Any], indent: int) -> None:
    print(f"{'':>{indent}}{_attempt(a)}".rstrip())
    for line in (a.get("traceback") or "").rstrip("\n").splitlines():
        print(f"{'':>{indent + 2}}{line}".rstrip())


def _attempt(a: dict[str, Any]) -> str:
    """One attempt's line: which, how it ended, when, how long, its meters, its error."""
    who = "" if a.get("branch") is None else f"branch {a['branch']} {a.get('name')!r} "
    took = "-" if a.get("duration_ms") is None else f"{a['duration_ms']} ms"
    parts = [f"{who}attempt {a.get('attempt')}", f"{a.get('outcome', ''):<8}",
             f"at {when(a['started_at'])}" if a.get("started_at") is not None else "",
             took]
    if a.get("fuel") is not None:
        parts.append(f"fuel {a['fuel']:,}")
    if a.get("memory_grown"):
        parts.append(f"memory +{a['memory_grown']:,} B")
    return "  ".join([*(p for p in parts if p), a.get("error") or ""])


def _detail(st: dict[str, Any]) -> str:
    """A position's times, then its error. A wait that got its event shows no time: its
    wake_at was a deadline it did not need."""
    parts = []
    if st.get("wake_at") and (st.get("kind"), st.get("state")) != ("wait", "done"):
        parts.append(f"wake at {when(st['wake_at'])}")
    if st.get("next_attempt_at"):
        parts.append(f"next attempt at {when(st['next_attempt_at'])}")
    return " ".join([*parts, st.get("error") or ""]).strip()
