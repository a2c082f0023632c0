"""The state mapping (wkguest.cloudflare.states): every runner state has a Cloudflare
status, and a state the runner adds fails here until it is mapped."""

from __future__ import annotations

import pytest
from wkguest.cloudflare import STATUS_OF, STATUSES, cloudflare_status
from wkguest.workflow import STATES

# The runner's state, with positions recorded → Cloudflare's status.
EXPECTED = {
    "running": "running",
    "compensating": "running",
    "waiting": "waiting",
    "paused": "paused",
    "completed": "complete",
    "failed": "errored",
    "parked": "errored",
    "cancelled": "terminated",
    "terminated": "terminated",
}


def test_every_runner_state_is_mapped_and_only_those() -> None:
    assert set(STATES) == set(EXPECTED), "a runner state without a Cloudflare status"
    assert set(STATUS_OF) == set(STATES)


@pytest.mark.parametrize("state", STATES)
def test_each_state_maps_to_its_cloudflare_status(state: str) -> None:
    assert cloudflare_status(state, 3) == EXPECTED[state]
    assert cloudflare_status(state, 3) in STATUSES


def test_running_with_nothing_recorded_is_queued() -> None:
    assert cloudflare_status("running", 0) == "queued"
    # only running: a compensating instance has recorded its failure at least
    assert cloudflare_status("compensating", 0) == "running"
    assert cloudflare_status("waiting", 0) == "waiting"


def test_every_cloudflare_status_is_reachable() -> None:
    reached = {cloudflare_status(s, n) for s in STATES for n in (0, 1)}
    assert reached == set(STATUSES)


def test_an_unknown_state_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="'frozen'"):
        cloudflare_status("frozen", 1)
