"""`wkhost workflow steps`: an instance's recorded positions, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .client import WorkflowAdmin
from .options import Exit
from .text import when


def add_args(p: argparse.ArgumentParser) -> None:
    """The options of `workflow steps` beyond CLASS, ID, the server's and --json (none yet)."""


def run(admin: WorkflowAdmin, args: argparse.Namespace) -> int:
    steps = admin.steps(args.cls, args.id)
    if args.json:
        print(json.dumps(steps, default=str))
    else:
        _print_steps(steps)
    return Exit.OK


def _print_steps(steps: list[dict[str, Any]]) -> None:
    # As wide as the longest name (a group's names its branches), within 24 to 48.
    w = min(max([24, *(len(str(st.get("name", ""))) for st in steps)]), 48)
    print(f"{'pos':>4}  {'kind':<6} {'name':<{w}} {'state':<10} {'tries':>5}  detail")
    for st in steps:
        row = (f"{st.get('pos', ''):>4}  {st.get('kind', ''):<6} "
               f"{str(st.get('name', ''))[:w]:<{w}} {st.get('state', ''):<10} "
               f"{st.get('attempts', 0):>5}  {_detail(st)}")
        print(row.rstrip())


def _detail(st: dict[str, Any]) -> str:
    """A position's times, then its error. A wait that got its event shows no time: its
    wake_at was a deadline it did not need."""
    parts = []
    if st.get("wake_at") and (st.get("kind"), st.get("state")) != ("wait", "done"):
        parts.append(f"wake at {when(st['wake_at'])}")
    if st.get("next_attempt_at"):
        parts.append(f"next attempt at {when(st['next_attempt_at'])}")
    return " ".join([*parts, st.get("error") or ""]).strip()
