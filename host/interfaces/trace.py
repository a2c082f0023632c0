"""The `trace` interface: spans a guest opens and ends in its event (host/guest_spans.py
keeps and bounds them). With tracing off every function answers at once: `current` "",
`begin` 0, and the guest need not call again in this instance."""

from __future__ import annotations

from typing import Any

from .. import tracing
from ..guest_spans import GuestSpans
from .log import bounded_fields
from .ports import E, Events


def register(root: Any, guard: Any, host: Events[E]) -> None:
    current = host.current_event

    def current_span(_store: Any) -> str:
        return "" if tracing.tracer is None else tracing.current()

    def begin(_store: Any, name: str, parent: str, attributes: list[tuple[str, str]]) -> int:
        if tracing.tracer is None:
            return 0
        ev = current()
        spans: GuestSpans | None = ev.guest_spans
        if spans is None:
            spans = ev.guest_spans = GuestSpans()
        return spans.begin(name, parent, _attributes(attributes))

    def end(_store: Any, span: int, attributes: list[tuple[str, str]],
            error: tuple[str, str, str] | None) -> None:
        spans = current().guest_spans
        if spans is not None:
            spans.end(span, _attributes(attributes), error)

    with root.add_instance("wk:host/trace@0.1.0") as iface:
        iface.add_func("current", guard(current_span))
        iface.add_func("begin", guard(begin))
        iface.add_func("end", guard(end))


def _attributes(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """The log's bounds (interfaces/log.py), a dot kept in a name: OpenTelemetry's names
    are dotted (`wkhost.workflow.step`)."""
    return bounded_fields(pairs, dotted=True)
