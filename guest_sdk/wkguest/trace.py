"""Spans of the actor's own, in the host's traces (WIT `trace`; `wkhost serve
--otlp-endpoint`).

    with trace.span("charge card", order=oid):
        ...

A span is the current one while it is open: the actor calls and fetches made meanwhile
are its children. Its parent is the current span (the event's), or a `traceparent` kept
from `current()` (the workflow runner keeps its run's, so that a run's steps are one
trace). When the host does not trace, each call answers at once, and after the first
none crosses to the host at all.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator

from wkguest import _bindings as _b

__all__ = ["begin", "begin_with", "current", "end", "end_with", "span", "traced"]

_known: list[bool] = []  # [whether the host traces], once it has said (this instance)


def traced() -> bool:
    """Whether the host traces: asked once per instance (tracing is on or off for a
    host process's life, and an instance lives in one)."""
    if not _known:
        current()
    return _known[0]


def current() -> str:
    """The current span's W3C `traceparent`, or "" when the host does not trace."""
    if _known and not _known[0]:
        return ""
    got: str = _b.trace.current()
    if not _known:
        _known.append(bool(got))
    return got


def begin(name: str, parent: str = "", **attributes: object) -> int:
    """Begin span `name`: its handle for `end`, or 0 when nothing is traced."""
    return begin_with(name, parent, [(k, str(v)) for k, v in attributes.items()])


def begin_with(name: str, parent: str, attributes: list[tuple[str, str]]) -> int:
    """`begin`, the attributes as pairs of strings (what the workflow runner calls)."""
    if _known and not _known[0]:
        return 0
    handle: int = _b.trace.begin(name, parent, attributes)
    if not _known:  # 0 from a host that does not trace, as its first answer
        _known.append(bool(handle) or bool(_b.trace.current()))
    return handle


def end(handle: int, error: BaseException | tuple[str, str, str] | None = None,
        **attributes: object) -> None:
    """End span `handle` (0: nothing to do), with `error` recorded on it if it failed:
    an exception, or its (type's name, message, traceback) as text."""
    if not handle:
        return
    failed = error if not isinstance(error, BaseException) else (
        type(error).__name__, str(error), "".join(traceback.format_exception(error)))
    end_with(handle, [(k, str(v)) for k, v in attributes.items()], failed)


def end_with(handle: int, attributes: list[tuple[str, str]],
             failed: tuple[str, str, str] | None) -> None:
    """`end`, the attributes as pairs of strings and the error as (type's name, message,
    traceback)."""
    if handle:
        _b.trace.end(handle, attributes, failed)


@contextlib.contextmanager
def span(name: str, parent: str = "", **attributes: object) -> Iterator[int]:
    """A span around the block: ended as it leaves, with the exception it raises."""
    handle = begin(name, parent, **attributes)
    try:
        yield handle
    except BaseException as e:
        end(handle, e)
        raise
    end(handle)
