"""What a guest traces itself (WIT `trace`): spans it opens and ends inside one event, with
the host's OpenTelemetry tracer (host/tracing.py). The workflow runner's span of each step
attempt is one (guest_sdk/wkguest/workflow/core/spans.py); the host gives them no meaning.

A span is a child of the `parent` the guest gives (a W3C `traceparent` it kept: the
runner's is the request's that began the run, so that a run's steps are one trace across
its events) or, without one, of the current span; with a parent, it is linked to the
current span too (the event that ran it). While open it is the current span: the host
calls made meanwhile (an actor call, a fetch) are its children. Spans end in the order they
began: ending one ends those begun after it first. The event's end ends what is still open,
with an error status (a trap cut it).

A guest controls every name and value, so each is bounded: a name keeps its first
MAX_NAME characters; attributes as the log's fields (interfaces/log.py's bounded_fields);
at most MAX_OPEN spans open at once and MAX_PER_EVENT begun in one event (past either,
`begin` answers 0, and nothing is traced); an exception's message and stack trace keep
their first MAX_MESSAGE and last MAX_STACK characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import tracing

MAX_NAME = 128
MAX_OPEN = 16
MAX_PER_EVENT = 1000
MAX_MESSAGE = 4096
MAX_STACK = 16384


class GuestSpans:
    """One event's spans, those open as a stack: (handle, span, context token)."""

    __slots__ = ("_open", "_begun")

    def __init__(self) -> None:
        self._open: list[tuple[int, Any, object]] = []
        self._begun = 0

    def begin(self, name: str, parent: str, attributes: Mapping[str, str]) -> int:
        """A new span, current until it ends: its handle (> 0), or 0 past the bounds."""
        if len(self._open) >= MAX_OPEN or self._begun >= MAX_PER_EVENT:
            return 0
        from opentelemetry import context, trace
        from opentelemetry.trace import Link

        here = trace.get_current_span().get_span_context()
        links = []
        under = None  # the current context
        if parent:
            under = tracing.extracted(parent)
            kept = None if under is None else trace.get_current_span(under).get_span_context()
            if kept is not None and here.is_valid and kept.span_id != here.span_id:
                links.append(Link(here))  # run by another event than the parent's
        span = tracing.tracer.start_span(name[:MAX_NAME], context=under, links=links,
                                         attributes=dict(attributes))
        token = context.attach(trace.set_span_in_context(span))
        self._begun += 1
        self._open.append((self._begun, span, token))
        return self._begun

    def end(self, handle: int, attributes: Mapping[str, str],
            error: tuple[str, str, str] | None) -> None:
        """End span `handle` (and any begun after it, still open), with `attributes` and,
        if it failed, `error` (the exception's type, message and stack trace)."""
        if not any(h == handle for h, _, _ in self._open):
            return  # ended already, or never begun: nothing to do
        while self._open:
            h, span, token = self._open.pop()
            if h == handle:
                span.set_attributes(dict(attributes))
                if error is not None:
                    _failed(span, *error)
                _close(span, token)
                return
            _close(span, token, "ended with the span it was begun in")

    def close(self, why: str) -> None:
        """The event ended: what is still open ends, as `why` (a trap's reason)."""
        while self._open:
            _, span, token = self._open.pop()
            _close(span, token, why)


def _failed(span: Any, type_name: str, message: str, stack: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    message = message[:MAX_MESSAGE]
    span.add_event("exception", {"exception.type": type_name[:MAX_NAME],
                                 "exception.message": message,
                                 "exception.stacktrace": stack[-MAX_STACK:]})
    span.set_status(Status(StatusCode.ERROR, f"{type_name[:MAX_NAME]}: {message}"))


def _close(span: Any, token: object, error: str | None = None) -> None:
    from opentelemetry import context
    from opentelemetry.trace import Status, StatusCode

    if error is not None:
        span.set_status(Status(StatusCode.ERROR, error))
    span.end()
    context.detach(token)  # type: ignore[arg-type]
