"""The hop to the node holding an actor's shard (host/net/node_hop.py) starts from the
placement's answer its caller got, and asks the placement again only after an attempt
that ran nothing there."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from wkhost.net.node_hop import NOT_OWNER, pass_to_owner, refused_unrun
from wkhost.net.peer_clients import Exchange
from wkhost.placement import HERE, Where

B = Where(False, node="b", address="b:80", epoch=3)
C = Where(False, node="c", address="c:80", epoch=4)
OK: Exchange = (200, [], b"ran")
NOT_HERE: Exchange = (503, [("wk-cluster", NOT_OWNER)], b"")


class Placement:
    """A cluster's placement that answers from a list, and counts the questions."""

    me = "a"

    def __init__(self, answers: list[Where]) -> None:
        self.answers, self.asked = answers, 0

    def where(self, actor_id: str) -> Where:
        self.asked += 1
        return self.answers[min(self.asked, len(self.answers)) - 1]

    def address_of(self, node_id: str) -> str | None:
        return f"{node_id}:80"


def _hop(place: Placement, first: Where, answers: dict[str, Exchange]
         ) -> tuple[Exchange | None, list[str]]:
    sent: list[str] = []

    async def send(address: str, moved: Callable[[], bool], gone: Callable[[], bool]
                   ) -> Exchange | None:
        sent.append(address)
        return answers[address]

    got = asyncio.run(pass_to_owner(place, "x", first, send, refused_unrun,
                                    patience_s=5))
    return got, sent


def test_the_callers_answer_is_used_without_asking_again() -> None:
    place = Placement([C])
    assert _hop(place, B, {"b:80": OK}) == (OK, ["b:80"])
    assert place.asked == 0


def test_a_refusal_that_ran_nothing_asks_again_and_goes_to_the_new_holder() -> None:
    place = Placement([C])
    assert _hop(place, B, {"b:80": NOT_HERE, "c:80": OK}) == (OK, ["b:80", "c:80"])
    assert place.asked == 1


def test_an_actor_that_has_come_here_is_served_here() -> None:
    place = Placement([HERE])
    assert _hop(place, B, {"b:80": NOT_HERE}) == (None, ["b:80"])
    assert _hop(Placement([]), HERE, {}) == (None, [])
