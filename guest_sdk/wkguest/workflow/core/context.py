"""`StepContext`: what a step's attempt knows about itself (Cloudflare's step context).

    def fetch_page() -> Any:
        ctx = wf.step_context
        log(f"{ctx.name} #{ctx.count}, attempt {ctx.attempt}, key {ctx.key}")

It is `wf.step_context` while a step's function runs (a step branch's too), and the first
argument of a delay function (policy.py). `count` is worked out only when it is read, by
a scan of the journal: nothing on the replay path, nor on an attempt's, pays for it.
"""

from __future__ import annotations

from .journal import Journal
from .kinds import STEP_FAILED, STEP_RETURNED, STEP_RETURNED_TAGGED

_STEP_KINDS = frozenset({STEP_RETURNED, STEP_RETURNED_TAGGED, STEP_FAILED})


class StepContext:
    """One attempt of a step.

    name         the step's name
    count        1 for the first step of that name in this run, 2 for the second, ...
                 (the steps of that name at earlier positions, plus one; a group's
                 branches share their group's position, so a branch counts the steps
                 before its group)
    attempt      1 for the first attempt, 2 for the first retry, ...
    position     the step's position in the journal
    key          its idempotency key (`wf.key(position)`; a branch's own key)
    deadline_ms  the host-clock time (ms since the epoch) at which the attempt times
                 out, or None if the step has no timeout
    """

    __slots__ = ("name", "attempt", "position", "key", "deadline_ms", "_journal", "_count")

    def __init__(self, name: str, attempt: int, position: int, key: str,
                 deadline_ms: int | None, journal: Journal) -> None:
        self.name = name
        self.attempt = attempt
        self.position = position
        self.key = key
        self.deadline_ms = deadline_ms
        self._journal = journal
        self._count: int | None = None

    @property
    def count(self) -> int:
        if self._count is None:
            j, name = self._journal, self.name
            upto = min(self.position, len(j))
            self._count = 1 + sum(1 for pos in range(upto)
                                  if j.kinds[pos] in _STEP_KINDS and j.name(pos) == name)
        return self._count

    def __repr__(self) -> str:
        return (f"StepContext(name={self.name!r}, attempt={self.attempt}, "
                f"position={self.position}, key={self.key!r}, "
                f"deadline_ms={self.deadline_ms})")
