"""bench.bench_cluster's accounting: a process tree's CPU read from /proc, and what bounds
a workflow. The benchmark itself (PostgreSQL and two servers) runs with `python -m
bench.bench_cluster`."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.bench_cluster import bound, node_cores, tree_cpu_s

# The child burns this much CPU of its own (by its own clock), then waits for its stdin.
BURN = ("import sys, time\n"
        "while time.process_time() < 0.3: pass\n"
        "print('burnt', flush=True); sys.stdin.read()\n")


def test_a_tree_counts_its_live_children_and_its_ended_ones() -> None:
    before = tree_cpu_s(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "burnt\n"
        alive = tree_cpu_s(os.getpid()) - before
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
    ended = tree_cpu_s(os.getpid()) - before  # now in this process's cutime + cstime
    # /proc gives user and system time apart, each in whole clock ticks: a tick off each.
    slack = 3 / os.sysconf("SC_CLK_TCK")
    assert alive >= 0.3 - slack
    assert ended >= alive - slack


def _fig(wall: float, node: float, pg: float, client: float) -> dict[str, dict[str, float]]:
    return {"wall_us": {"median": wall}, "node_cpu_us": {"median": node},
            "pg_cpu_us": {"median": pg}, "client_cpu_us": {"median": client}}


def test_bound_names_the_largest_part_and_waiting_is_what_no_cpu_covers() -> None:
    assert bound(_fig(10_000, 8_000, 1_000, 500)) == "node CPU (80% of the wall time)"
    assert bound(_fig(10_000, 2_000, 1_000, 500)) == "waiting (65% of the wall time)"
    assert bound(_fig(10_000, 2_000, 6_000, 500)) == "PostgreSQL CPU (60% of the wall time)"
    assert node_cores(_fig(10_000, 9_500, 0, 0)) == 0.95
