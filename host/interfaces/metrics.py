"""The `metrics` interface: a guest's own counters and histograms, in the host's metrics
(host/guest_metrics.py bounds and keeps them). A refused sample is dropped and counted;
with the metrics off (WKHOST_METRICS=off) every sample is taken and dropped."""

from __future__ import annotations

from typing import Any

from .. import metrics
from ..guest_metrics import GUEST
from .ports import E, Events


def register(root: Any, guard: Any, host: Events[E]) -> None:
    current, on, submits = host.current_event, metrics.ON, GUEST.submit

    def submit(_store: Any, samples: str) -> None:
        if on and samples:
            submits(current().slot.ref.cls, samples)

    with root.add_instance("wk:host/metrics@0.1.0") as iface:
        iface.add_func("submit", guard(submit))
