"""How the runner tells what happened: an exception as one recorded line (`describe`),
and a reordered journal as the error that parks the instance (`reordered`)."""

from __future__ import annotations

from ..errors import NonRetryable, Reordered
from .kinds import NOW, PATCH_MARKER, PATCHED, RANDOM, UUID, call_of, shown

MAX_ERROR_CHARS = 4000


def describe(e: BaseException) -> str:
    """An exception as one recorded line: "Type: message" (NonRetryable: the message)."""
    msg = str(e)
    if isinstance(e, NonRetryable):
        text = msg or type(e).__name__
    else:
        text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text.replace("\n", " ")[:MAX_ERROR_CHARS]


def reordered(pos: int, kind: str, recorded: str, call: str, name: str) -> Reordered:
    hint = "" if kind != PATCH_MARKER else (
        f" (a patch marker: where the code no longer asks wf.patched({recorded!r}), keep "
        f"wf.deprecate_patch({recorded!r}) until no running instance holds the marker)")
    return Reordered(
        f"the code changed the order of its steps: position {pos} was recorded as "
        f"{_named(call_of(kind), shown(recorded) or recorded)}{hint}, and the code now "
        f"reaches {_named(call, shown(name) or name)} there. Running instances need the "
        "recorded order (new steps may only follow the recorded ones); serve changed code "
        "as a new class."
    )


def _named(call: str, name: str) -> str:
    """A position's primitive as an error names it: "step 'charge'", "wf.now()"."""
    if call in _HELPERS:
        return f"wf.{call}()"
    if call == PATCHED:
        return f"wf.patched({name!r})"
    return f"{call} {name!r}"


_HELPERS = frozenset({NOW, RANDOM, UUID})
