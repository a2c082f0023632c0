"""Prometheus metrics at `GET /_wk/metrics`, for operators: the admin token as
a bearer token (a scrape config's `authorization: {credentials_file: ...}`, or
`bearer_token_file`). Without it: 403; with a wrong one: 401.

The figures are the host's counters (host/metrics.py) and its state's gauges
(core/gauges.py). With `--processes N` each process keeps its own; the process that
takes the scrape asks every other one for its figures (`GET /_wk/peer/metrics` on the
Unix socket) and answers their sums, series by series: an event counter is then the
host's, and so are the queue's depth and the RSS. A process that does not answer is left
out (the log says so, and `wkhost_processes` counts those that did).

Why not prometheus-client's multiprocess mode: it needs its directory and environment set
before prometheus_client is first imported, its files outlive a process that dies and
is started again by the supervisor (a restart must then mark the old one dead, or its
counts stay in the sums for good), and its gauges each need a mode chosen for summing.
Asking the live processes over the socket they already share costs one request each
per scrape and keeps every figure in memory.

The answer is Prometheus's text format 0.0.4, or OpenMetrics 1.0 to a scraper that asks
for it (`Accept: application/openmetrics-text`), which also says each family's unit. The
processes tell each other their figures in OpenMetrics, so that the units survive the sum.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client import generate_latest as text_0_0_4
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from .. import metrics
from ..core.gauges import registry_of
from ..errors import PeerLost, PeerUnavailable
from .operator import may_read, plain

log = logging.getLogger("wkhost")
PEER_ROUTE = "/_wk/peer/metrics"


def add_routes(app: web.Application) -> None:
    """The metrics route; on the app that serves the other processes (`for_peers`), the
    route that answers this process's own figures instead."""
    app.on_startup.append(_prepare)
    if app["for_peers"]:
        app.router.add_get(PEER_ROUTE, _here_route)
        return
    app.router.add_get("/_wk/metrics", _metrics)


async def _prepare(app: web.Application) -> None:
    registry = registry_of(app["host"])
    registry.register(_Fixed(metrics.REGISTRY.collect))
    app["metrics_here"] = registry


def text_here(app: web.Application) -> str:
    """This process's figures, in OpenMetrics. Blocking (the index)."""
    return _openmetrics(app["metrics_here"]).decode()


async def _here_route(request: web.Request) -> web.Response:
    text = await asyncio.to_thread(text_here, request.app)
    return web.Response(text=text, content_type="text/plain")


async def _metrics(request: web.Request) -> web.Response:
    if not may_read(request):
        return plain(403, "metrics are for operators and readers (send a token)")
    app = request.app
    partition = app["host"].config.partition
    others = [_ask(app, k) for k in range(partition.count) if k != partition.me]
    texts = [await asyncio.to_thread(text_here, app), *await asyncio.gather(*others)]
    wants_openmetrics = "application/openmetrics-text" in request.headers.get("Accept", "")
    body = summed((t for t in texts if t is not None), wants_openmetrics)
    return web.Response(body=body, headers={
        "Content-Type": OPENMETRICS if wants_openmetrics else CONTENT_TYPE_PLAIN_0_0_4})


async def _ask(app: web.Application, process: int) -> str | None:
    try:
        status, _, body = await app["peers"].exchange(process, "GET", PEER_ROUTE)
    except (PeerUnavailable, PeerLost) as e:
        log.warning("metrics: process %d did not answer: %s", process, e)
        return None
    if status != 200:
        log.warning("metrics: process %d answered %d", process, status)
        return None
    return bytes(body).decode()


def summed(texts: Iterable[str], as_openmetrics: bool = False) -> bytes:
    """One exposition of the sums of `texts`' series (each OpenMetrics; same name, same
    labels), in OpenMetrics or else the text format 0.0.4. The `_created` series go: a
    sum of creation times means nothing."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for fam in text_string_to_metric_families(text):  # type: ignore[no-untyped-call]
            if fam.name not in families:
                families[fam.name], values[fam.name] = fam, {}
            into = values[fam.name]
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue
                key = (s.name, tuple(sorted(s.labels.items())))
                into[key] = into.get(key, 0.0) + s.value
    merged = []
    for name, fam in families.items():
        if not values[name]:
            continue  # a family of `_created` series alone
        out = Metric(fam.name, fam.documentation, fam.type, fam.unit)
        for (sample, labels), value in values[name].items():
            out.add_sample(sample, dict(labels), value)
        merged.append(out)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(lambda: iter(merged)))
    return _openmetrics(registry) if as_openmetrics else text_0_0_4(registry)


def _openmetrics(registry: CollectorRegistry) -> bytes:
    return openmetrics(registry)  # type: ignore[no-untyped-call,no-any-return]


class _Fixed(Collector):
    """The families `families()` yields at each collect."""

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families())
