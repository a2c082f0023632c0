"""The metrics read off the host's state when Prometheus scrapes, not counted as things
happen: the queue's depth, the alarms pending, the actors, the workflow instances by
status (from the index), the process's resident memory. Nothing on the hot path.

The instances by status are what each actor last published (WIT attributes: a workflow
publishes its state), as the index holds it; the host gives a status no meaning, so an
actor class that publishes free-form statuses makes a series for each.
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .. import __version__
from ..engine.instance import LIVE
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
            "wkhost_actors_by_status", "Actors by the status they last published (a "
            "workflow's state), from the index", labels=("class", "status"))
        for cls, status, n in host.index.status_counts():
            by_status.add_metric((cls, status), n)
        yield by_status
        yield _gauge("wkhost_wasm_instances", "Live wasm instances (a Store each, with its "
                     "linear memory): running, kept warm or spare", LIVE.count)
        rss = resident_bytes()
        if rss is not None:
            yield _gauge("wkhost_resident_memory_bytes", "The process's resident memory "
                         "(RSS)", rss, "bytes")
        yield from _budget(host)
        yield from _this_process(str(host.config.partition.me))


def _budget(host: Host) -> Iterator[Metric]:
    """--memory-budget's figures (runtime/memory_budget.py); the budget 0 when off."""
    budget = host.memory
    yield _gauge("wkhost_memory_budget_bytes", "--memory-budget (0: no budget)",
                 budget.budget if budget else 0, "bytes")
    if budget is not None:
        yield _gauge("wkhost_memory_budget_rss_bytes", "The RSS the host last read to "
                     "keep it under the budget", budget.rss, "bytes")
        yield _gauge("wkhost_memory_over_budget", "1 while the actors busy with events "
                     "alone hold more than the budget (served all the same)", budget.over)


_PROCESS = ProcessCollector(registry=None)
_BUILD = {"version": __version__, "python": platform.python_version(),
          "wasmtime": importlib.metadata.version("wasmtime")}


def _this_process(process: str) -> Iterator[Metric]:
    """prometheus_client's `process_*` figures and the build, each labelled with this
    process's number: with --processes N the route sums series of the same labels, and a
    sum of start times, or of builds, would mean nothing."""
    for fam in _PROCESS.collect():
        yield _labelled(fam, process)
    info = GaugeMetricFamily("wkhost_build_info", "The build serving: 1, labelled with "
                             "its versions", labels=("process", *_BUILD))
    info.add_metric((process, *_BUILD.values()), 1)
    yield info


def _labelled(fam: Metric, process: str) -> Metric:
    """`fam` with the label `process`, and the unit its name ends in declared (which
    prometheus_client's ProcessCollector leaves out)."""
    unit = fam.unit or next((u for u in ("seconds", "bytes") if fam.name.endswith("_" + u)),
                            "")
    out = Metric(fam.name, fam.documentation, fam.type, unit)
    for s in fam.samples:
        out.add_sample(s.name, {**s.labels, "process": process}, s.value)
    return out


def _gauge(name: str, doc: str, value: float, unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value, unit=unit)


def registry_of(host: Host) -> CollectorRegistry:
    """A registry of `host`'s gauges alone (the counters are host/metrics.py's)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HostGauges(host))
    return registry
