"""What happens to an instance besides its own run, for the crash-point harness: the
events it is sent and the clock's moves, as a script, and the driver that plays it on an
instance to its end, across a kill of its server.

A script is a JSON list, played in order:

    [{"event": "approved", "payload": {"by": "ann"}},   sent once the instance waits for it
     {"advance": "2h"}]                                  the clock moved on by that much

Between entries the clock skips to each next alarm (a sleep's end, a backoff, a wait's
deadline), as the test kit's `wait_for_status` does; so a wait for an event the script
does not send times out, and one it sends is answered before its deadline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wkguest.durations import to_ms
from wkguest.workflow.status import Status

from .workflows import ENDED, WorkflowInstance


class ScriptError(ValueError):
    """A script that is not a list of entries this module knows; the message says which."""


@dataclass(frozen=True)
class Entry:
    event: str | None = None  # an event to send, once waited for
    payload: Any = None
    advance_ms: int = 0  # else: a move of the clock


def parse_script(doc: Any, where: str = "the script") -> list[Entry]:
    if not isinstance(doc, list):
        raise ScriptError(f"{where}: a JSON list of entries, got {type(doc).__name__}")
    out: list[Entry] = []
    for i, e in enumerate(doc):
        at = f"{where}, entry {i}"
        if not isinstance(e, dict):
            raise ScriptError(f"{at}: an object, got {json.dumps(e)[:80]}")
        keys = set(e)
        if "event" in e and keys <= {"event", "payload"} and isinstance(e["event"], str):
            out.append(Entry(event=e["event"], payload=e.get("payload")))
        elif keys == {"advance"}:
            try:
                out.append(Entry(advance_ms=to_ms(e["advance"], f"{at}'s advance")))
            except (TypeError, ValueError) as err:
                raise ScriptError(str(err)) from None
        else:
            raise ScriptError(f"{at}: {{\"event\": NAME, \"payload\": ANY}} or "
                              f"{{\"advance\": DURATION}}, got {json.dumps(e)[:80]}")
    return out


def load_script(path: str | Path) -> list[Entry]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ScriptError(f"cannot read the script {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ScriptError(f"the script {path} is not JSON: {e}") from None
    return parse_script(doc, str(path))


class Stuck(Exception):
    """The instance rests short of its end with nothing to bring it on: no alarm within
    the horizon, and no event of the script it waits for."""

    def __init__(self, status: Status, why: str) -> None:
        super().__init__(why)
        self.status = status


class Player:
    """Plays a script on one instance. `play` may be cut short by the server's death (an
    OSError from a request): after a restart, `play` again goes on where it was, and an
    event whose sending the death cut short is sent again only if the instance still
    waits for it (the runner sets its alarm before it records an event, so one recorded
    is taken on the restart)."""

    def __init__(self, instance: WorkflowInstance, script: list[Entry], within_ms: int
                 ) -> None:
        self.instance, self.todo, self.within_ms = instance, list(script), within_ms
        self.sending: Entry | None = None
        self.target: int | None = None  # the clock's target of an advance begun
        self.horizon: int | None = None

    def play(self) -> Status:
        """To the instance's end; raises Stuck if it rests short of it."""
        inst, kit = self.instance, self.instance.kit
        if self.horizon is None:
            self.horizon = kit.now() + self.within_ms
        while True:
            kit.run()
            st = inst.status()
            if st.state in ENDED:
                return st
            if self.sending is not None and self.sending.event not in st.waiting_for:
                self.todo.remove(self.sending)  # it was recorded before the death
                self.sending = None
            if self._send_awaited(st):
                continue
            nxt = kit.next_alarm()
            if self.todo and self.todo[0].event is None:  # an advance: alarms on the way
                if self.target is None:  # fire at their times, as Kit.advance does
                    self.target = kit.now() + self.todo[0].advance_ms
                if nxt is None or nxt > self.target:
                    kit.skip_to(self.target)
                    self.todo.pop(0)
                    self.target = None
                    continue
            elif nxt is None or nxt > self.horizon:
                waits = f", waiting for {', '.join(st.waiting_for)}" if st.waiting_for else ""
                raise Stuck(st, f"it stays {st.state}{waits}: "
                                + ("no alarm is set" if nxt is None else
                                   f"its next alarm is past the horizon, at +{nxt - kit.now()} ms"))
            kit.skip_to(nxt)

    def _send_awaited(self, st: Status) -> bool:
        for e in self.todo:
            if e.event is None:
                return False  # an advance first: events after it wait for it
            if e.event in st.waiting_for:
                self.sending = e
                self.instance.send_event(e.event, e.payload)
                self.todo.remove(e)
                self.sending = None
                return True
        return False
