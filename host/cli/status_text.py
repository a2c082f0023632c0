"""How `wkhost workflow` shows an instance's status: a line (with its output, error and
an update-with-start's update), or JSON (workflow.py, operate.py's moves)."""

from __future__ import annotations

import json
import sys
from typing import Any

from .client import Started, Status
from .text import when


def say_if_input_ignored(cls: str, actor_id: str, s: Started) -> None:
    if s.created or not s.input_differs:
        return
    at = f" (created at {when(s.created_at)})" if s.created_at is not None else ""
    print(f"wkhost: {cls}/{actor_id}: instance already exists{at}: its input differs "
          "from the one given, which was ignored", file=sys.stderr)


def print_status(cls: str, actor_id: str, s: Status, as_json: bool,
                  started: Started | None = None) -> None:
    """`s` as a line (and its output and error), or as JSON; a start's JSON also says
    what the start did (`started`: its first answer, before any --wait)."""
    if as_json:
        print(json.dumps(status_doc(s, started), default=repr))
        return
    line = f"{cls}/{actor_id}: {s.state}, {s.positions} positions"
    if s.waiting_for:
        line += f", waiting for {', '.join(s.waiting_for)}"
    if s.wake_at is not None:
        line += f", wakes at {when(s.wake_at)}"
    if s.parked_at is not None:
        line += f", since {when(s.parked_at)}"
    if s.paused_at is not None:
        line += f", paused since {when(s.paused_at)}"
    if s.runs > 1:  # continued as new, or restarted
        line += f", run {s.runs} (previous run {s.previous_run_id})"
    if s.held_by:
        line += f", held by {s.held_by}"
    print(line)
    if s.output is not None:
        print(f"  output: {json.dumps(s.output, default=repr)}")
    if s.error:
        print(f"  error: {s.error}")
    if s.update is not None:  # an update-with-start's
        u = s.update
        print(f"  update {u.name!r} ({u.id}): {u.state}"
              + (f": {json.dumps(u.result, default=repr)}" if u.state == "completed" else "")
              + (f": {u.error}" if u.error else ""))


def status_doc(s: Status, started: Started | None) -> dict[str, Any]:
    doc = {"state": s.state, "wake_at": s.wake_at, "waiting_for": list(s.waiting_for),
           "output": s.output, "error": s.error, "positions": s.positions, "run_id": s.run_id,
           "runs": s.runs}
    if s.previous_run_id is not None:  # continued as new
        doc["previous_run_id"] = s.previous_run_id
    if s.parked_at is not None:
        doc["parked_at"] = s.parked_at
    if s.paused_at is not None:
        doc["paused_at"] = s.paused_at
    if s.held_by is not None:
        doc["held_by"] = s.held_by
    if started is not None:
        doc |= {"created": started.created, "input_differs": started.input_differs,
                "created_at": started.created_at}
    if s.update is not None:  # an update-with-start's
        doc["update"] = {k: getattr(s.update, k) for k in s.update.__dataclass_fields__}
    return doc
