"""One workflow function served as two classes, a parent and its child, for the child
workflow tests through `wkhost serve` (tests/e2e/test_workflow_children.py).

The input says which role an instance plays. A parent ({"kid_cls", "kid_id", "n"})
runs a tx step "before", the child `kid_cls`/`kid_id` (awaited), then a tx step
"after". A child ({"kid": id, "n": n}) runs two tx steps, "charge" and "ship". Every tx
step inserts its name into the instance's own table `effects` in one transaction with
its recorded result (the child's insert tagged /*app:kid-effect*/, a crash point), so a
step that ran again would show as a second row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wkguest import workflow

EFFECTS = workflow.Tables("""
    CREATE TABLE IF NOT EXISTS effects (seq INTEGER PRIMARY KEY, name TEXT NOT NULL)
""")


def _effect(name: str, value: Any, tag: str) -> Callable[[workflow.TxDb], Any]:
    def effect(db: workflow.TxDb) -> Any:
        db.exec(f"/*{tag}*/ INSERT INTO effects (name) VALUES (?)", (name,))
        return value
    return effect


def family(wf: workflow.Run, inp: Any) -> Any:
    if "kid" in inp:
        n = inp["n"]
        charged = wf.step("charge", _effect("charge", n * 10, "app:kid-effect"), tx=EFFECTS)
        shipped = wf.step("ship", _effect("ship", n + 1, "app:kid-effect"), tx=EFFECTS)
        return {"kid": inp["kid"], "charged": charged, "shipped": shipped}
    before = wf.step("before", _effect("before", "b", "app:effect"), tx=EFFECTS)
    got = wf.child(inp["kid_cls"], inp["kid_id"], {"kid": inp["kid_id"], "n": inp["n"]})
    after = wf.step("after", _effect("after", "a", "app:effect"), tx=EFFECTS)
    return {"before": before, "child": got, "after": after}


Handler = workflow.serve(family, workflow.Config(retention_ms=3_600_000))
