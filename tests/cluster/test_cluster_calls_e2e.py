"""Actors' calls to actors of a paused node, on three real nodes over one real PostgreSQL
(tests/cluster/conftest.py): a call the paused node never took is asked again of the new
owner, and one it may have run is never sent again, both answered while the node is
still paused. Outcomes and their order only, never timings (the timeouts are a net)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from .load import CREATE, INSERT, call, ensure_table, ok, values
from .nodes import Cluster, across_a_takeover, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str, build_guest: Callable[[str], Path]
            ) -> Iterator[Cluster]:
    c = Cluster(tmp_path, pg_url, {"probe": build_guest("probe")})
    try:
        yield c.start()
    finally:
        c.close()


def _owned(cluster: Cluster, prefix: str, i: int, n: int) -> list[str]:
    name = cluster.node(i).name
    got = [a for a in (f"{prefix}-{k}" for k in range(80)) if cluster.owner(a) == name][:n]
    assert len(got) == n, f"{name} serves too few of the candidates"
    return got


def _call(cluster: Cluster, node: int, caller: str, callee: str, statement: str,
          params: list[Any], timeout: float = 90) -> tuple[int, Any]:
    """`caller`'s call (through `node`, which serves it) of the callee's /sql, as the
    caller answered it: (status, its answer), the callee's inside."""
    inner = {"sql": statement, "params": params, "durable": True}
    return call(cluster.node(node).url, "POST", f"/probe/{quote(caller, safe='')}/call",
                {"cls": "probe", "id": callee, "path": "/sql", "body": json.dumps(inner)},
                cluster.token, timeout)


def _answered(got: tuple[int, Any]) -> bool:
    """The callee answered the call, without an error."""
    if not ok(got) or got[1].get("status") != 200:
        return False
    inner = json.loads(got[1]["body"])
    return isinstance(inner, dict) and "error" not in inner


def test_calls_to_a_paused_nodes_actors_are_answered_by_the_new_owner(
        cluster: Cluster) -> None:
    """Calls made while the callee's node is paused past its TTL, before the takeover
    (the callers' views still name it) and after: each is answered by the new owner
    while the node is still paused, so none waited for its resume or its deadline."""
    victim, others = 0, [1, 2]
    name = cluster.node(victim).name
    callees = _owned(cluster, "callee", victim, 2)
    callers = {i: _owned(cluster, f"caller{i}", i, 4) for i in others}
    for callee in callees:
        ensure_table(cluster, callee)
        for i in others:  # each caller's node keeps a connection to the victim
            assert _answered(_call(cluster, i, callers[i][0], callee, CREATE, []))
    answers: dict[str, tuple[int, Any]] = {}
    answered_at: dict[str, float] = {}

    def one(i: int, caller: str, callee: str, value: str) -> None:
        answers[f"{callee}/{value}"] = _call(cluster, i, caller, callee, INSERT, [value])
        answered_at[f"{callee}/{value}"] = time.monotonic()

    def send(wave: str) -> list[threading.Thread]:
        sent = []
        for i in others:
            for k, callee in enumerate(callees):
                caller = callers[i][k + (0 if wave == "during" else len(callees))]
                t = threading.Thread(target=one, args=(i, caller, callee, f"{wave}-{i}"))
                t.start()
                sent.append(t)
        return sent

    owners, resumed_at = across_a_takeover(cluster, victim, callees, send)
    failed = {k: a for k, a in answers.items() if not _answered(a)}
    assert failed == {}
    assert len(answers) == 2 * len(callees) * len(others)
    assert max(answered_at.values()) < resumed_at
    assert name not in owners
    for callee in callees:
        assert values(cluster, callee) == sorted(
            f"{w}-{i}" for w in ("after", "during") for i in others)
    # The call heads it was sent and never the bodies of are refused quietly there.
    assert not [line for line in cluster.node(victim).log if "unexpected failure" in line]


def test_a_call_the_paused_node_may_have_run_is_answered_lost_and_not_sent_again(
        cluster: Cluster) -> None:
    """A call whose body the callee's node read, and which is running there when the node
    is paused past its TTL: once another node takes the callee over, the caller is
    answered that the call may have run (callee-lost) while the node is still paused,
    and the call is not sent to the new owner (its write is not there)."""
    victim, caller_node = 0, 1
    callee = _owned(cluster, "slow-callee", victim, 1)[0]
    caller = _owned(cluster, "slow-caller", caller_node, 1)[0]
    ensure_table(cluster, callee)
    assert _answered(_call(cluster, caller_node, caller, callee, INSERT, ["before"]))
    slow = ("INSERT INTO w VALUES ('late'); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
            "SELECT x + 1 FROM c WHERE x < 40000000) SELECT count(*) FROM c")
    answer: dict[str, Any] = {}

    def late() -> None:
        answer["a"] = _call(cluster, caller_node, caller, callee, slow, [], timeout=120)
        answer["at"] = time.monotonic()

    pid = cluster.node(victim).pid
    busy_from = _cpu_s(pid)
    t = threading.Thread(target=late)
    t.start()
    # Paused only once the statement runs there (its CPU shows it), however busy the
    # machine: a call not sent yet would simply go to the next owner.
    wait_until(lambda: _cpu_s(pid) - busy_from > 0.5, 60, "the slow call running there")
    cluster.pause(victim)
    try:
        wait_until(lambda: cluster.owner(callee) not in (None, cluster.node(victim).name),
                   60, "another node took the paused node's shard")
        t.join(120)
        assert not t.is_alive(), "the call was still waiting"
    finally:
        resumed_at = time.monotonic()
        cluster.resume(victim)
    status, doc = answer["a"]
    assert status == 200 and str(doc.get("error", "")).startswith("callee-lost:"), doc
    assert "may have run" in doc["error"]
    assert answer["at"] < resumed_at
    assert values(cluster, callee) == ["before"]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
