"""SpareInstances on stand-in instances: what is kept, for how long, and what never is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wkhost.engine.spare_instances import MAX_ACTORS_PER_INSTANCE, SpareInstances


@dataclass
class FakeInstance:
    usable: bool = True
    actors_served: int = 1


def offer(spares: SpareInstances, cls: str, inst: Any) -> None:
    spares.offer(cls, inst)


def test_spares_are_kept_per_class_up_to_the_cap_and_taken_newest_first() -> None:
    spares = SpareInstances(per_class=2)
    a, b, c = FakeInstance(), FakeInstance(), FakeInstance()
    for inst in (a, b, c):
        offer(spares, "x", inst)
    assert spares.count() == 2 and spares.kept == 2  # c was let go
    assert spares.take("y") is None
    assert spares.take("x") is b
    assert spares.take("x") is a
    assert spares.take("x") is None
    assert spares.taken == 2


def test_trapped_worn_and_missing_instances_are_never_kept() -> None:
    spares = SpareInstances(per_class=4)
    offer(spares, "x", None)
    offer(spares, "x", FakeInstance(usable=False))
    offer(spares, "x", FakeInstance(actors_served=MAX_ACTORS_PER_INSTANCE))
    assert spares.count() == 0
    offer(spares, "x", FakeInstance(actors_served=MAX_ACTORS_PER_INSTANCE - 1))
    assert spares.count() == 1


def test_idle_spares_go_and_zero_means_all() -> None:
    spares = SpareInstances(per_class=4)
    offer(spares, "x", FakeInstance())
    offer(spares, "y", FakeInstance())
    assert spares.drop_idle(3600) == 0
    assert spares.count() == 2
    assert spares.drop_idle(0) == 2
    assert spares.count() == 0 and spares.take("x") is None
