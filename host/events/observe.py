"""What a probe is told of the host's work, beside the metrics: the Observer that the host
calls (`Host(config, observer=...)`), so that no production function is shaped for a
probe. bench/bench_workflows.py's Probe implements it; `make lint`'s mypy does not reach
bench/ (wkhost resolves there only through the editable install's import hook), so what
guards the probe is the smoke run in `make test`: a probe that saw nothing raises
ProbeBlind (bench/common.py).

None by default: then each guest call and each event costs one `is None` test, and a
host function nothing (its guard is chosen when the class is linked)."""

from __future__ import annotations

from typing import Protocol

from ..types import ActorRef


class Observer(Protocol):
    def guest_call(self, ref: ActorRef, export: str, wall_ns: int, fuel: int) -> None:
        """A call into the guest ended (returned or trapped): its wall time, and the
        fuel it burnt."""

    def host_function(self, interface: str, name: str, ns: int) -> None:
        """A host function the guest called returned (interfaces/linker.py), on the
        thread of the guest call it is part of."""

    def event_ended(self, ref: ActorRef, kind: str, outcome: str, wall_ns: int) -> None:
        """An event ended, with the outcome its metrics count (host/metrics.py)."""
