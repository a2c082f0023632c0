"""The compatibility report's judge: would a new build replay each exported instance?

    verdicts = replay_exports("orders", Path("orders-new.wasm"), docs)

Each document (`wkhost workflow export`'s, docs/workflow-protocol.md) is imported, with
no alarm, into a server of the judge's own (`wkhost serve --fake-clock` on 127.0.0.1,
over a data directory of its own: the sandbox) that serves the new build as the class,
then replayed dry there (the `test` route's replay: no step runs, no fetch or call is
made, nothing is written). The live instances are only read, by their exports. A
verdict, by the instance's recorded state:

    replays        the new build replays every recorded position (and a finished run
                   ends as it did, with the same result)
    reordered      a recorded position is another call in the new build: the instance
                   would park (the message names the position and both calls)
    undecodable    a recorded value or the input does not decode in the new build
    fails          the new build raises replaying it (a mistake in the code)
    differs        the new build ends before the recorded positions, or ends a completed
                   instance with another result
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from wkguest.workflow import cbor
from wkguest.workflow.status import PREFIX

from .kit import Kit

FINISHED = ("completed", "failed", "cancelled", "terminated")


@dataclass(frozen=True)
class Verdict:
    id: str
    state: str  # as recorded
    verdict: str  # one of the module doc's
    positions: int  # recorded
    detail: str = ""  # why not "replays"

    @property
    def ok(self) -> bool:
        return self.verdict == "replays"

    def doc(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def replay_exports(cls: str, wasm: Path, docs: Iterable[dict[str, Any]],
                   progress: Callable[[Verdict], None] = lambda _v: None) -> list[Verdict]:
    out = []
    with Kit(sandbox=True) as kit:
        kit.serve(cls, wasm)
        for doc in docs:
            v = _judge(kit, cls, doc)
            progress(v)
            out.append(v)
    return out


def _judge(kit: Kit, cls: str, doc: dict[str, Any]) -> Verdict:
    id = str(doc["actor"]["id"])
    inst = _instance_row(doc)
    state, positions = str(inst.get("state")), len(doc["tables"]["_wk_wf_step"]["rows"])

    def verdict(name: str, detail: str = "") -> Verdict:
        return Verdict(id, state, name, positions, detail)

    status, body = kit.transport(cls, id, "POST", PREFIX + "import",
                                 cbor.dumps({"document": doc, "alarm": False}))
    if status != 200:
        return verdict("fails", f"the new build refused the copy ({status}): "
                       + str(cbor.loads(body) if body else ""))
    status, body = kit.transport(cls, id, "POST", PREFIX + "test",
                                 cbor.dumps({"replay": True}))
    got = cbor.loads(body)
    if status != 200:
        return verdict("fails", f"the replay was refused ({status}): {got}")
    if got["error"] is not None:
        return verdict({"reordered": "reordered", "undecodable": "undecodable"}.get(
            got.get("kind", "code"), "fails"), got["error"])
    # A finished run that the new build would take further (a step appended) is not run
    # again: it replays. One the new build ends early, or with another result, differs.
    if got["ended"] and got["position"] < positions:
        return verdict("differs", f"the new build ends at position {got['position']}, "
                       f"before the {positions} recorded positions")
    if state == "completed" and got["ended"]:
        recorded = _output(inst)
        if recorded != got["output"]:
            return verdict("differs", f"another result: recorded {recorded!r}, the new "
                           f"build returns {got['output']!r}")
    return verdict("replays")


def _instance_row(doc: dict[str, Any]) -> dict[str, Any]:
    table = doc["tables"]["_wk_wf"]
    return dict(zip(table["columns"], table["rows"][0], strict=True)) if table["rows"] else {}


def _output(inst: dict[str, Any]) -> Any:
    from wkguest.workflow.core.values import decode

    if inst.get("output") is None:
        return None
    return cbor.loads(cbor.dumps(decode(inst["output"], bool(inst.get("output_tagged")))))
