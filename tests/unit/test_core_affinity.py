"""Which cores each process of `serve --processes N` runs on (host/net/supervisor.py), and
what a process pinned to fewer cores runs at once (host/config.py)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from wkhost.config import HostConfig, usable_cores
from wkhost.net.cores import core_shares, pin_to_cores


@pytest.mark.parametrize(("cores", "processes", "shares"), [
    ({0, 1}, 2, [[0], [1]]),
    ({0, 1, 2, 3}, 2, [[0, 1], [2, 3]]),
    ({0, 1, 2}, 2, [[0], [1, 2]]),
    ({3, 5, 8, 9, 12}, 3, [[3], [5, 8], [9, 12]]),  # a cpuset's cores, not from 0
    ({0, 1, 2, 3}, 4, [[0], [1], [2], [3]]),
])
def test_each_process_gets_its_own_cores(cores: set[int], processes: int,
                                         shares: list[list[int]]) -> None:
    assert core_shares(cores, processes) == shares


@pytest.mark.parametrize(("cores", "processes"), [
    ({0}, 2),           # two processes pinned to one core would wait on each other
    ({0, 1}, 3),
    ({0, 1, 2, 3}, 1),  # one process: its guests use every core
])
def test_no_shares_without_a_core_for_each_process(cores: set[int], processes: int) -> None:
    assert core_shares(cores, processes) is None


def _in_a_child(code: str) -> object:
    """Run `code` in a new interpreter (pinning this one would pin the whole test run);
    it prints one JSON value."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


def test_a_pinned_process_and_its_later_threads_run_on_its_cores_alone() -> None:
    first = min(os.sched_getaffinity(0))
    code = f"""
import json, os, threading
from wkhost.config import HostConfig, usable_cores
from wkhost.net.cores import pin_to_cores
pin_to_cores([{first}])
seen = []
t = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
t.start(); t.join()
print(json.dumps([sorted(os.sched_getaffinity(0)), seen[0], usable_cores(),
                  HostConfig().run_slots()]))
"""
    assert _in_a_child(code) == [[first], [first], 1, 1]


def test_a_core_that_cannot_be_had_leaves_the_process_where_it_was(
        caplog: pytest.LogCaptureFixture) -> None:
    before = os.sched_getaffinity(0)
    with caplog.at_level(logging.WARNING, logger="wkhost.supervisor"):
        pin_to_cores([max(before) + 4096])  # no such core
    assert os.sched_getaffinity(0) == before
    assert "cannot pin this process" in caplog.text


def test_running_events_default_to_one_fewer_than_the_usable_cores() -> None:
    assert usable_cores() == len(os.sched_getaffinity(0))
    assert HostConfig().run_slots() == max(1, usable_cores() - 1)
    assert HostConfig(running_events=3).run_slots() == 3
