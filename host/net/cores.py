"""Each process of `--processes N` on its own share of the cores (`--cpu-affinity auto`,
the default), when there are at least as many cores as processes. A process's threads then
hand the GIL to one another on one core, whose caches hold that process's code and data,
instead of waking the other core: more workflows for less CPU each (docs/performance.md).
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("wkhost.supervisor")


def core_shares(cores: set[int], processes: int) -> list[list[int]] | None:
    """Each process's own cores, as even a split of `cores` as goes: one core each when
    there are as many processes as cores. None for fewer cores than processes, where two
    processes pinned to one core would wait on each other while another core idles."""
    ordered = sorted(cores)
    if processes < 2 or len(ordered) < processes:
        return None
    return [ordered[k * len(ordered) // processes:(k + 1) * len(ordered) // processes]
            for k in range(processes)]


def pin_to_cores(cores: list[int]) -> None:
    """In a process: run on `cores` only, from now on. Called before the host starts a
    thread, since a thread keeps the affinity it was started with."""
    try:
        os.sched_setaffinity(0, cores)
    except OSError as e:  # a core taken offline, or a cpuset changed since the supervisor looked
        log.warning("cannot pin this process to cores %s (%s): the kernel places it", cores, e)


def core_shares_here(processes: int) -> list[list[int]] | None:
    """`core_shares` of the cores this process may run on (Linux only: None elsewhere)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    shares = core_shares(os.sched_getaffinity(0), processes)
    if shares is None:
        log.info("%d processes, not pinned: fewer usable cores than processes", processes)
    return shares
