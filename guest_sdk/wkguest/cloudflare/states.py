"""Cloudflare's instance status names, from the runner's states: one table.

    runner state    Cloudflare status
    running         queued while nothing is recorded yet (its first run has not reached
                    a step), else running
    compensating    running (its rollbacks are running, newest first)
    waiting         waiting (a sleep, an event's wait)
    paused          paused
    completed       complete
    failed          errored
    parked          errored: stopped by a failure that is not the workflow's own (a
                    reordered deploy, a mistake in the code); `InstanceStatus.state` says
                    "parked", and an operator can rescue it (`wkhost workflow rescue`)
    cancelled       terminated (a terminate with rollback: its rollbacks ran)
    terminated      terminated

A step waiting out its retry delay is `running`, as the runner reports it.
"""

from __future__ import annotations

STATUSES = ("queued", "running", "paused", "waiting", "complete", "errored", "terminated")

STATUS_OF: dict[str, str] = {
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


def cloudflare_status(state: str, positions: int) -> str:
    """The Cloudflare status of an instance in runner state `state` with `positions`
    journal positions recorded. Raises ValueError for a state this table does not map."""
    try:
        status = STATUS_OF[state]
    except KeyError:
        raise ValueError(f"no Cloudflare status for the runner's state {state!r}") from None
    return "queued" if status == "running" and state == "running" and positions == 0 \
        else status


__all__ = ["STATUSES", "STATUS_OF", "cloudflare_status"]
