"""wkguest's loop of coroutines (overlap_loop.py) on plain CPython, with no request made:
what it does with what a coroutine awaits, gathers and their errors, and the keys a
gather's coroutines count under. Requests themselves: tests/e2e/test_overlap.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from wkguest import idempotency
from wkguest.overlap_loop import Gather, Loop, Task


def ran(*coros: Any, keys: idempotency.Keys | None = None) -> list[Task]:
    tasks = [Task(c, keys=keys) for c in coros]
    Loop(tasks).run()
    return tasks


def test_an_asyncio_await_fails_the_coroutine_saying_why() -> None:
    async def sleeps() -> None:
        await asyncio.sleep(0)

    [t] = ran(sleeps())
    assert isinstance(t.error, TypeError)
    assert "only wkguest.overlap's fetch, call and gather" in str(t.error)


def test_a_gather_gives_values_in_order_and_the_first_error_after_all_ended() -> None:
    ended: list[str] = []

    async def value(name: str) -> str:
        ended.append(name)
        return name

    async def boom(name: str) -> str:
        ended.append(name)
        raise ValueError(name)

    async def both() -> Any:
        return await Gather((value("a"), value("b")))

    async def failing() -> Any:
        return await Gather((boom("x"), value("y"), boom("z")))

    ok, bad = ran(both(), failing())
    assert ok.value == ["a", "b"] and ok.error is None
    assert isinstance(bad.error, ValueError) and str(bad.error) == "x"
    assert sorted(ended) == ["a", "b", "x", "y", "z"]  # every one ran to its end


def test_a_gathers_coroutines_count_their_keys_apart() -> None:
    seen: list[Any] = []

    async def one() -> None:
        seen.append(idempotency.keyed("POST", []))

    async def two() -> Any:
        seen.append(idempotency.keyed("POST", []))  # the task's own first key
        return await Gather((one(), one()))

    ran(two(), keys=idempotency.Keys("run-3", idempotency.UNSAFE_METHODS))
    assert seen == [[("Idempotency-Key", "run-3")], [("Idempotency-Key", "run-3-2.0")],
                    [("Idempotency-Key", "run-3-2.1")]]
    assert idempotency.current is None  # restored once the loop ended


@pytest.mark.parametrize("method, keyed", [("GET", False), ("post", True), ("DELETE", True)])
def test_only_unsafe_methods_are_keyed_and_a_key_given_is_kept(method: str,
                                                               keyed: bool) -> None:
    keys = idempotency.Keys("r-1", idempotency.UNSAFE_METHODS)
    got = keys.headers(method, [])
    assert (got == [("Idempotency-Key", "r-1")]) is keyed
    mine = [("idempotency-key", "mine")]
    assert keys.headers("PUT", mine) == mine  # kept, and it took its number
    assert keys.headers("PUT", []) == [("Idempotency-Key", f"r-1-{3 if keyed else 2}")]
