"""Idempotency keys on outgoing fetches: what `http.fetch` and `overlap.fetch` add while a
workflow's step runs (the runner sets `current`; nothing else does).

A step's fetches that are not safe (POST, PUT, PATCH and DELETE by default) carry
`Idempotency-Key: <key>` for the first, `<key>-<n>` for the nth, where `<key>` is the
step's own (`wf.step_context().key`: `<run id>-<position>`, a branch's
`<run id>-<position>.<index>`). The count starts again at each attempt, so an attempt
that runs again after a retry or a crash sends the same keys in the same order. A fetch
that sets its own Idempotency-Key keeps it, and counts all the same. The coroutines of a
`overlap.gather` inside a step count apart: the gather takes the next number `n`, and
its coroutine `i` (from 0) counts under `<key>-<n>.<i>`, whatever order their requests
go out in.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

HEADER = "Idempotency-Key"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

Headers = Sequence[tuple[str, str]]


class Keys:
    """The keys of one attempt of a step (or of one coroutine of a gather inside it)."""

    __slots__ = ("base", "methods", "n")

    def __init__(self, base: str, methods: Collection[str] = UNSAFE_METHODS) -> None:
        self.base = base
        self.methods = methods  # upper case (a step's options are made so)
        self.n = 0

    def headers(self, method: str, headers: Headers) -> Headers:
        """`headers`, with this fetch's key if `method` is keyed and none is set."""
        if method.upper() not in self.methods:
            return headers
        self.n += 1
        if any(k.lower() == "idempotency-key" for k, _ in headers):
            return headers
        key = self.base if self.n == 1 else f"{self.base}-{self.n}"
        return [*headers, (HEADER, key)]

    def fork(self, count: int) -> list[Keys]:
        """The keys of the `count` coroutines of a gather: the next number is the
        gather's, and each coroutine counts apart under it."""
        self.n += 1
        return [Keys(f"{self.base}-{self.n}.{i}", self.methods) for i in range(count)]


# The keys of the step whose code runs now, or None (no step, or keys turned off).
current: Keys | None = None


def keyed(method: str, headers: Headers) -> Headers:
    """`headers` as a fetch sends them now: with its key, if a step's keys apply."""
    return headers if current is None else current.headers(method, headers)
