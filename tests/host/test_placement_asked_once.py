"""Who serves an actor is asked once per request or call (host/placement.py), where it
comes in: the front door (or the peer routes) for a request, before the Host is asked
to run it; the events for an actor's call. The event itself does not ask again."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from wkhost.partition import Partition
from wkhost.placement import Where

from .support import MakeProbe


@dataclass(frozen=True)
class CountedPartition(Partition):
    """One process's partition that notes each question of an actor's place."""

    asked: list[str] = field(default_factory=list)

    def where(self, actor_id: str) -> Where:
        self.asked.append(f"where {actor_id}")
        return super().where(actor_id)

    def owner(self, actor_id: str) -> int:
        self.asked.append(f"owner {actor_id}")
        return super().owner(actor_id)


def test_a_request_and_an_actor_call_ask_once(make_probe: MakeProbe) -> None:
    partition = CountedPartition()
    probe = make_probe(partition=partition)
    assert probe.send("a", "GET", "/echo").status == 200  # the entry asked; not the event
    assert partition.asked == []
    out = probe.json("a", "POST", "/call", {"cls": "inner", "id": "b", "path": "/sql",
                                            "body": json.dumps({"sql": "SELECT 1",
                                                                "params": []})})
    assert out["status"] == 200, out
    assert partition.asked == ["where b"]


def test_an_actor_call_to_another_process_without_a_remote_is_refused(
        make_probe: MakeProbe) -> None:
    """A Host of one of two processes built with nothing to call the other by (an
    embedder's, say) refuses an actor of the other one, as the peer route does."""
    partition = Partition(0, 2)
    assert (partition.owner("a"), partition.owner("p2")) == (0, 1)
    probe = make_probe(partition=partition)
    out = probe.json("a", "POST", "/call", {"cls": "probe", "id": "p2", "path": "/echo"})
    assert out["error"] == "error: probe/p2 is served by process 1, not this one", out
