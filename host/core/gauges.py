"""The metrics read off the host's state when Prometheus scrapes, not counted as things
happen: the queue's depth, the alarms pending, the actors, the workflow instances by
status (from the index), the process's resident memory. Nothing on the hot path.

The instances by status are what each actor last published (WIT attributes: a workflow
publishes its state), as the index holds it; the host gives a status no meaning, so an
actor class that publishes free-form statuses makes a series for each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..runtime.memory import resident_bytes

if TYPE_CHECKING:
    from .host import Host


class HostGauges(Collector):
    def __init__(self, host: Host) -> None:
        self._host = host

    def collect(self) -> Iterator[Metric]:
        host = self._host
        yield _gauge("wkhost_processes", "Processes whose figures these are (with "
                     "--processes N, those that answered the scrape)", 1)
        yield _gauge("wkhost_queue_depth", "Events waiting for an event thread or running "
                     "(refused past --max-pending)", host.pending_events)
        yield _gauge("wkhost_alarms_pending", "Actors whose alarm is set, due or not",
                     host.scheduler.pending())
        yield _gauge("wkhost_actors", "Actors kept on disk", host.admission.actors)
        by_status = GaugeMetricFamily(
            "wkhost_instances", "Actors by the status they last published (a workflow's "
            "state), from the index", labels=("class", "status"))
        for cls, status, n in host.index.status_counts():
            by_status.add_metric((cls, status), n)
        yield by_status
        rss = resident_bytes()
        if rss is not None:
            yield _gauge("wkhost_resident_memory_bytes", "The process's resident memory "
                         "(RSS)", rss)
        yield from _budget(host)


def _budget(host: Host) -> Iterator[Metric]:
    """--memory-budget's figures (runtime/memory_budget.py); the budget 0 when off."""
    budget = host.memory
    yield _gauge("wkhost_memory_budget_bytes", "--memory-budget (0: no budget)",
                 budget.budget if budget else 0)
    if budget is not None:
        yield _gauge("wkhost_memory_budget_rss_bytes", "The RSS the host last read to "
                     "keep it under the budget", budget.rss)
        yield _gauge("wkhost_memory_over_budget", "1 while the actors busy with events "
                     "alone hold more than the budget (served all the same)", budget.over)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def registry_of(host: Host) -> CollectorRegistry:
    """A registry of `host`'s gauges alone (the counters are host/metrics.py's)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HostGauges(host))
    return registry
