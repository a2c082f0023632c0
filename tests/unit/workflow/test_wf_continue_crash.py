"""Continue-as-new cut at each statement of its switch (core/continuation.py), on the fake host: the
event traps there (what was committed stays, the open transaction goes), and, in the
power-loss cases, what was not yet durable goes too. The instance is then the old run
whole or the new run alone, never a mix; and it goes on to finish as if never cut."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from wkguest.workflow import Run
from wkguest.workflow.testing import FakeBackend, FakeHost

from .test_wf_tx_crash import cut_at

TAGS = ["wk:can-begin", "wk:can-table", "wk:can-chain", "wk:can-clear", "wk:can-run",
        "wk:can-commit"]
POINTS = [f"sql-{when}:{tag}" for tag in TAGS for when in ("before", "after")]


def one_run(b: FakeBackend, old_id: str) -> str:
    """Which run the instance holds ("old" or "new"), asserting it holds only that one."""
    ((run_id, inp),) = b.rows("SELECT run_id, input FROM _wk_wf")
    names = {n for (n,) in b.rows("SELECT name FROM _wk_wf_step")}
    chain = b.rows("SELECT runs, previous_run_id FROM _wk_wf_run")
    if run_id == old_id:
        assert inp == "0" and chain == [] and names <= {"work 0", "ran"}, (inp, chain, names)
        return "old"
    assert inp == "1" and chain == [(2, old_id)] and names == set(), (inp, chain, names)
    return "new"


@pytest.mark.parametrize("power_loss", [False, True], ids=["trap", "power-loss"])
@pytest.mark.parametrize("point", POINTS)
def test_a_cut_in_the_switch_leaves_the_old_run_or_the_new_one(
        any_host: FakeHost, point: str, power_loss: bool) -> None:
    calls: Counter[str] = Counter()

    def wf(run: Run, n: Any) -> Any:
        def work() -> Any:
            calls[f"work {n}"] += 1
            return n * 10
        got = run.step(f"work {n}", work)
        run.emit("ran", n)
        if n == 0:
            run.continue_as_new(1)
        return got

    any_host.serve("w", wf)
    c = any_host.client("w")
    c.start("1", 0)
    old_id = c.status("1").run_id
    b = any_host.instance("w", "1").backend
    fired = cut_at(b, point, 0)
    any_host.fire("w", "1")  # the first run, which continues
    assert fired() and any_host.traps == 1, point
    if power_loss:
        b.power_loss()
    held = one_run(b, old_id)
    committed = point == "sql-after:wk:can-commit"
    assert held == ("new" if committed else "old"), (point, held)

    any_host.advance(2000)  # the alarm (or the host's retry) brings the next runs
    s = c.status("1")
    assert (s.state, s.output, s.runs, s.previous_run_id) == ("completed", 10, 2, old_id), s
    assert calls["work 1"] == 1 and calls["work 0"] <= 2
    assert [e.payload for e in c.events("1")] == [0, 1]  # each run's emit, once
