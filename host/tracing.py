"""OpenTelemetry traces: off unless `wkhost serve --otlp-endpoint URL`.

Off, nothing here is imported beyond this module, and the hot path pays one test of
`tracer` per event and nothing per host call (interfaces/linker.py wraps a host function
in a span only when tracing is on as its class is loaded). The SDK is the optional extra
`wkhost[otel]`; asked for without it, `export_to` raises a HostError that says so.

What is traced:
- a client's request at the front door: a SERVER span "{METHOD} /{class}/{id}" with
  HTTP's attributes (`serving`, net/frontdoor.py), which is also its first event's span
  (that event's attributes on it; a held request's later deliveries are its children). With a
  valid W3C `traceparent` (and `tracestate`) it is a child of the client's span
  (`from_client`); a malformed one is ignored, and the span is a root. With
  `--processes N` only the process that serves the actor makes it: the one that passes
  the request on runs no event;
- each other event (an alarm, an actor's call, a held request delivered again): a span
  "{kind} {class}" (events/lifecycle.py). An event's span has the class, the kind, the
  actor's id, how it ended and its fuel as attributes (the id is an attribute of a span,
  never a metric's label);
- a host call that leaves the actor: an actor call ("actors.call") or a fetch
  ("http.fetch"), a CLIENT span, child of the current one, the callee's and the fetch's
  attributes on it. SQL statements and the other host calls are not spans: each would
  cost about what the statement does (docs/performance.md);
- what a guest traces itself (WIT `trace`, host/guest_spans.py): the workflow runner's
  span of each step attempt, in the trace of the request that began its run;
- an actor call's callee: its event's span is a child of the caller's call span. In one
  process the callee runs on the caller's thread, inside that span; across processes
  (host/net/peers.py) the call carries W3C `traceparent` (`carrier`, `run_in`);
- a guest's fetch carries `traceparent` only to the destinations the operator names
  (`--trace-propagate HOST[:PORT],...`, matched like --allow-http's entries), since a
  trace id sent to a third party leaks.
"""

from __future__ import annotations

import contextlib
import functools
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


# The front door's SERVER spans whose request has not run its event yet, by span id: the
# first event a request runs is that span (`event_span`), not a child of it. One span
# less per request, and a span is most of what tracing costs (docs/performance.md).
_serving: dict[int, Any] = {}


@contextlib.contextmanager
def event_span(cls: str, actor_id: str, kind: str) -> Iterator[Any]:
    """The event's span: the front door's SERVER span for the first event of a client's
    request (see `_serving`), else a span "{kind} {class}" of its own."""
    from opentelemetry import trace

    attributes = {"wkhost.class": cls, "wkhost.actor_id": actor_id, "wkhost.kind": kind}
    served = _serving.pop(trace.get_current_span().get_span_context().span_id, None)
    if served is not None:
        served.set_attributes(attributes)
        yield served
        return
    with tracer.start_as_current_span(f"{kind} {cls}", attributes=attributes) as span:
        yield span


def event_ended(span: Any, outcome: str, fuel: int) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("wkhost.outcome", outcome)
    span.set_attribute("wkhost.fuel", fuel)
    if outcome != "ok":
        span.set_status(Status(StatusCode.ERROR, outcome))


# The host calls that leave the actor, traced as CLIENT spans: (interface, WIT name).
CLIENT_CALLS = frozenset({("actors", "call"), ("http", "fetch")})


def traced(fn: Callable[..., T], name: str) -> Callable[..., T]:
    """`fn` (a host function that leaves the actor), each call inside a CLIENT span
    named `name`."""
    from opentelemetry.trace import SpanKind

    start = tracer.start_as_current_span

    def in_span(*args: Any) -> T:
        with start(name, kind=SpanKind.CLIENT):
            return fn(*args)

    return in_span


def annotate(attributes: Mapping[str, Any]) -> None:
    """Attributes on the current span (an actor call's callee, a fetch's URL and status);
    nothing when tracing is off."""
    if tracer is not None:
        from opentelemetry import trace

        trace.get_current_span().set_attributes(attributes)


def failed(why: str) -> None:
    """The current span (a call's, a fetch's) failed: its status says `why`."""
    if tracer is not None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        trace.get_current_span().set_status(Status(StatusCode.ERROR, why))


@contextlib.contextmanager
def serving(method: str, cls: str, attributes: Mapping[str, Any],
            client: dict[str, str]) -> Iterator[Any]:
    """The front door's SERVER span of one request, a child of the `client`'s trace
    (`from_client`), while the request is served; yields it, for `carrier_of` and
    `answered`. Ended with an error status if what is served raises."""
    from opentelemetry import context
    from opentelemetry.trace import SpanKind

    parent = _propagator.extract(client) if client else context.Context()
    span = tracer.start_span(f"{method} /{cls}/{{id}}", context=parent,
                             kind=SpanKind.SERVER, attributes=attributes)
    span_id = span.get_span_context().span_id
    _serving[span_id] = span
    try:
        yield span
    except BaseException as e:
        answered(span, getattr(e, "http_status", 500))
        raise
    finally:
        _serving.pop(span_id, None)  # no event ran (refused, passed on...)
        span.end()


def answered(span: Any, status: int) -> None:
    """The front door answered `status`: a 5xx is the server's error (a 4xx is the
    client's, and leaves the span's status unset, as HTTP's conventions say)."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))


def carrier_of(span: Any) -> dict[str, str]:
    """`span`'s W3C trace context, to send along (the front door's to its event)."""
    from opentelemetry import trace

    out: dict[str, str] = {}
    _propagator.inject(out, context=trace.set_span_in_context(span))
    return out


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


@functools.lru_cache(maxsize=1024)
def extracted(traceparent: str) -> Any:
    """The context of a W3C `traceparent` a guest kept (host/guest_spans.py), or None if
    it is malformed. Remembered: a run's every attempt gives the same one, and a Context
    is immutable."""
    from opentelemetry import trace

    ctx = _propagator.extract({"traceparent": traceparent})
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def current() -> str:
    """The current span's W3C `traceparent`, or "" (tracing off)."""
    return carrier().get("traceparent", "")


def fetch_headers(target: Any) -> list[tuple[str, str]]:
    """The headers that carry the trace in a fetch to `target`, if it may have them."""
    if tracer is None or not _propagates(target):
        return []
    return list(carrier().items())
