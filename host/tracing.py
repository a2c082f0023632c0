"""OpenTelemetry traces: off unless `wkhost serve --otlp-endpoint URL`.

Off, nothing here is imported beyond this module, and the hot path pays one test of
`tracer` per event and nothing per host call (interfaces/linker.py wraps a host function
in a span only when tracing is on as its class is loaded). The SDK is the optional extra
`wkhost[otel]`; asked for without it, `export_to` raises a HostError that says so.

What is traced:
- each event: a span "{kind} {class}" (events/lifecycle.py), with the class, the kind, the
  actor's id, how it ended and its fuel as attributes (the id is an attribute of a span,
  never a metric's label); a workflow instance's event also has its run id, its status
  and its journal's last position at the event's end (`workflow_ended`; read from the
  instance's own tables by storage/workflow_place.py, which says why so);
- a client's request: with a valid W3C `traceparent` (and `tracestate`), its event's
  span is a child of the client's span (`from_client`, net/frontdoor.py); a malformed
  one is ignored, and the span is a root. With `--processes N` only the process that
  serves the actor reads it: the one that passes the request on runs no event;
- each host call: a child span "{interface}.{function}" (SQL, an actor call, a fetch...);
- an actor call's callee: its event's span is a child of the caller's call span. In one
  process the callee runs on the caller's thread, inside that span; across processes
  (host/net/peers.py) the call carries W3C `traceparent` (`carrier`, `run_in`);
- a guest's fetch carries `traceparent` only to the destinations the operator names
  (`--trace-propagate HOST[:PORT],...`, matched like --allow-http's entries), since a
  trace id sent to a third party leaks.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from .errors import HostError

T = TypeVar("T")

tracer: Any = None          # the opentelemetry Tracer, once on
_provider: Any = None
_propagator: Any = None


def _nowhere(_target: Any) -> bool:
    return False


_propagates: Callable[[Any], bool] = _nowhere


def install(provider: Any, propagates: Callable[[Any], bool] | None = None) -> None:
    """Trace through `provider` (an SDK TracerProvider: a test's, with an in-memory
    exporter, or `export_to`'s). `propagates(target)`: whether a fetch to `target`
    (fetch/policy.py's Target) carries the trace (HostConfig.trace_targets)."""
    global tracer, _provider, _propagator, _propagates
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _provider, tracer = provider, provider.get_tracer("wkhost")
    _propagator = TraceContextTextMapPropagator()
    _propagates = propagates or _nowhere


def export_to(endpoint: str, process: int,
              propagates: Callable[[Any], bool] | None = None) -> None:
    """Export spans over OTLP/HTTP to `endpoint` (its /v1/traces URL), in batches."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise HostError(f"--otlp-endpoint needs OpenTelemetry's SDK and OTLP exporter, "
                        f"not installed here ({e}): pip install 'wkhost[otel]'") from None
    resource = Resource.create({"service.name": "wkhost", "wkhost.process": process})
    # Not at the interpreter's exit: shutdown() flushes, bounded; the SDK's own exit hook
    # would flush again without a bound.
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    install(provider, propagates)


# How long a stop waits for the last spans to go out. The exporter tries each batch for
# up to its own timeout, again and again while the collector is down or silent: a stop
# would wait for every batch queued, a minute or more, for spans that are only a view.
FLUSH_AT_STOP_S = 3.0


def shutdown(within_s: float = FLUSH_AT_STOP_S) -> None:
    """Flush what is batched, for at most `within_s` (what is not sent by then is
    dropped, said in one line), and trace no more."""
    global tracer, _provider
    if _provider is not None:
        flushing = threading.Thread(target=_provider.shutdown, name="wk-trace-flush",
                                    daemon=True)
        flushing.start()
        flushing.join(within_s)
        if flushing.is_alive():
            logging.getLogger("wkhost").warning(
                "traces: the OTLP endpoint did not take the last spans within %.0f s of the "
                "stop: they are dropped", within_s)
    tracer = _provider = None


@contextlib.contextmanager
def event_span(cls: str, actor_id: str, kind: str) -> Iterator[Any]:
    with tracer.start_as_current_span(f"{kind} {cls}", attributes={
            "wkhost.class": cls, "wkhost.actor_id": actor_id,
            "wkhost.kind": kind}) as span:
        yield span


def event_ended(span: Any, outcome: str, fuel: int) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("wkhost.outcome", outcome)
    span.set_attribute("wkhost.fuel", fuel)
    if outcome != "ok":
        span.set_status(Status(StatusCode.ERROR, outcome))


def workflow_ended(span: Any, place: tuple[str, str, int | None] | None) -> None:
    """A workflow instance's (run id, status, last step position) on its event's span."""
    if place is None:
        return
    run_id, status, step = place
    span.set_attribute("wkhost.workflow.run_id", run_id)
    span.set_attribute("wkhost.workflow.status", status)
    if step is not None:
        span.set_attribute("wkhost.workflow.step", step)


def traced(fn: Callable[..., T], name: str) -> Callable[..., T]:
    """`fn` (a host function), each call inside a span named `name`."""
    start = tracer.start_as_current_span

    def in_span(*args: Any) -> T:
        with start(name):
            return fn(*args)

    return in_span


def carrier() -> dict[str, str]:
    """The current span's W3C trace context (`traceparent`), to send along; {} if off."""
    out: dict[str, str] = {}
    if tracer is not None:
        _propagator.inject(out)
    return out


def from_client(headers: Mapping[str, str]) -> dict[str, str]:
    """A client's W3C trace context (`traceparent`, `tracestate`), to `run_in`; {} when
    off, so that nothing is read. Its checks are `run_in`'s extract: a malformed
    `traceparent` is dropped there (the event's span is a root), never refused."""
    if tracer is None:
        return {}
    return {k: v for k in ("traceparent", "tracestate") if (v := headers.get(k)) is not None}


def run_in(carried: dict[str, str] | None, fn: Callable[..., T], *args: Any,
           **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` with the trace context `carried` (from `carrier` or
    `from_client`) as its parent."""
    if tracer is None or not carried:
        return fn(*args, **kwargs)
    from opentelemetry import context

    token = context.attach(_propagator.extract(carried))
    try:
        return fn(*args, **kwargs)
    finally:
        context.detach(token)


def fetch_headers(target: Any) -> list[tuple[str, str]]:
    """The headers that carry the trace in a fetch to `target`, if it may have them."""
    if tracer is None or not _propagates(target):
        return []
    return list(carrier().items())
