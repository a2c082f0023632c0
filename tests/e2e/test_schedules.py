"""Schedules through a real `wkhost serve --schedules` on the fake clock: the clock moved
forward past many fire times (catch-up none, one and all capped; overlap skip and
allow), pause, resume, delete and list through `wkhost schedule`, and a kill -9 at a
fire: after the restart the fire has started exactly one instance.

The target is tests/guests/wf_events.py: with no items it waits for the event "ship",
so an instance stays unfinished until the test ships it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wkguest.schedule import APP
from wkhost.cli.client import WorkflowAdmin

from ..conftest import CACHE_DIR
from .reliability_support import Host
from .server import REPO

MINUTE = 60_000
EVERY_10 = "*/10 * * * *"
WAITS = '{"items": []}'
TIMEOUT = 30.0
Serve = Callable[..., Host]


@pytest.fixture(scope="session")
def components(build_guest: Callable[[str | Path], Path]) -> dict[str, Path]:
    """The target, and the schedule class built once (serve then finds it cached)."""
    return {"jobs": build_guest("wf_events"), "schedules": build_guest(APP)}


@pytest.fixture
def serve(components: dict[str, Path], tmp_path: Path) -> Iterator[Serve]:
    hosts: list[Host] = []

    def start(env: dict[str, str] | None = None) -> Host:
        host = Host(tmp_path / "data", {"jobs": components["jobs"]}, ["--schedules"],
                    {"jobs": "internal"}, {"WKHOST_CACHE_DIR": str(CACHE_DIR), **(env or {})})
        hosts.append(host)
        return host.start()

    yield start
    with contextlib.ExitStack() as stopping:
        for h in hosts:
            stopping.callback(h.close)


def wkhost(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wkhost.cli", *args, "--server", host.url,
                           "--data", str(host.data)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def ok(host: Host, *args: str) -> Any:
    """`wkhost ARGS --json` that must succeed: its JSON."""
    out = wkhost(host, *args, "--json")
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return json.loads(out.stdout)


def describe(host: Host, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = ok(host, "schedule", "describe", name)
    return doc


def settled(host: Host, name: str, pred: Callable[[dict[str, Any]], bool]
            ) -> dict[str, Any]:
    """Poll `name`'s description until `pred` holds (its alarm runs in its own event)."""
    end = time.monotonic() + TIMEOUT
    status, d = host.actor("schedules", name, "POST", "/wk-schedule/v1/describe", {})
    while not (status == 200 and pred(d)):
        if time.monotonic() > end:
            pytest.fail(f"{name}: not there after {TIMEOUT} s: {d}\n"
                        + "\n".join(host.log[-30:]), pytrace=False)
        time.sleep(0.05)
        status, d = host.actor("schedules", name, "POST", "/wk-schedule/v1/describe", {})
    return dict(d)


def jobs(host: Host) -> list[str]:
    return sorted(WorkflowAdmin(host.url, host.token).ids("jobs"))


def at(name: str, t: int) -> str:
    return f"{name}-{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime(t / 1000))}"


def test_the_clock_moved_forward_catches_up_as_each_policy_says(serve: Serve) -> None:
    host = serve()
    for name, policy in (("every", ["--overlap", "allow", "--catchup", "all",
                                    "--catchup-max", "3"]),
                         ("newest", ["--overlap", "skip", "--catchup", "one"]),
                         ("never", ["--overlap", "allow", "--catchup", "none"])):
        ok(host, "schedule", "create", name, "jobs", EVERY_10, "--input", WAITS, *policy)
    first = describe(host, "every")["next_fires"][0]
    assert all(describe(host, n)["next_fires"][0] == first for n in ("newest", "never"))

    host.advance(max(0, first - host.advance(0)))  # to the first fire time exactly
    for name in ("every", "newest", "never"):
        settled(host, name, lambda d: d["started"] == 1)
    assert jobs(host) == sorted(at(n, first) for n in ("every", "newest", "never"))

    # Down for an hour: 00:10 .. 01:00 past the first fire are all late by 5 min or more.
    host.advance(65 * MINUTE)
    every = settled(host, "every", lambda d: d["started"] == 4)
    assert (every["missed"], every["skipped"]) == (3, 0)
    assert [f["instance"] for f in every["fires"] if f["outcome"] == "started"] == [
        at("every", first + k * MINUTE) for k in (60, 50, 40, 0)]
    newest = settled(host, "newest", lambda d: d["skipped"] == 1)
    assert (newest["started"], newest["missed"]) == (1, 5)
    assert newest["fires"][0]["note"] == f"{at('newest', first)} is waiting"
    never = settled(host, "never", lambda d: d["missed"] == 6)
    assert never["started"] == 1
    assert len(jobs(host)) == 6

    # Once the instance it started finishes, "newest" starts again at its next fire.
    sent = wkhost(host, "workflow", "send-event", "jobs", at("newest", first), "ship")
    assert sent.returncode == 0, sent.stderr
    wait = ok(host, "workflow", "status", "jobs", at("newest", first), "--wait")
    assert wait["state"] == "completed"
    host.advance(10 * MINUTE)
    settled(host, "newest", lambda d: d["started"] == 2)
    assert at("newest", first + 70 * MINUTE) in jobs(host)


def test_pause_resume_list_and_delete_through_the_cli(serve: Serve) -> None:
    host = serve()
    made = ok(host, "schedule", "create", "s", "jobs", EVERY_10, "--input", WAITS,
              "--overlap", "allow", "--catchup", "all")
    first = made["next_fires"][0]
    assert ok(host, "schedule", "pause", "s")["paused"] is True
    host.advance(first + 25 * MINUTE - host.advance(0))
    listed = ok(host, "schedule", "list")
    assert [(d["name"], d["paused"]) for d in listed] == [("s", True)]
    resumed = ok(host, "schedule", "resume", "s")
    assert resumed["next_fires"][0] == first + 30 * MINUTE  # the pause is not caught up
    assert jobs(host) == []
    host.advance(5 * MINUTE)
    settled(host, "s", lambda d: d["started"] == 1)
    assert jobs(host) == [at("s", first + 30 * MINUTE)]

    text = wkhost(host, "schedule", "describe", "s")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("s: starts jobs on '*/10 * * * *' (UTC), active\n")
    assert f"{at('s', first + 30 * MINUTE)}  started" in text.stdout

    again = wkhost(host, "schedule", "create", "s", "jobs", "@daily")
    assert again.returncode == 1 and "exists" in again.stderr, again
    bad = wkhost(host, "schedule", "create", "t", "jobs", "0 0 * *", "--tz", "Europe/Paris")
    assert bad.returncode == 1 and "4 fields, not 5" in bad.stderr, bad
    assert ok(host, "schedule", "delete", "s") == {"name": "s", "deleted": True}
    gone = wkhost(host, "schedule", "describe", "s")
    assert gone.returncode == 1 and "no schedule 's'" in gone.stderr, gone
    assert ok(host, "schedule", "list") == []
    assert jobs(host) == [at("s", first + 30 * MINUTE)]  # its instance is left as it was


def test_a_kill_at_a_fire_starts_exactly_one_instance_after_the_restart(
        serve: Serve) -> None:
    # Killed after the start was answered, before the fire's outcome is recorded.
    host = serve({"WKHOST_CRASH_AT": "sql-before:wk:schedule-fired"})
    first = ok(host, "schedule", "create", "s", "jobs", EVERY_10, "--input", WAITS,
               "--overlap", "allow")["next_fires"][0]
    with contextlib.suppress(Exception):  # the host dies while it answers
        host.advance(first - host.advance(0))
    assert host.wait_exit(TIMEOUT) == -9, "\n".join(host.log[-20:])
    assert any("crash point sql-before:wk:schedule-fired" in line for line in host.log)

    host = serve()
    host.advance(max(0, first - host.advance(0)))  # no-op: the clock resumed where it was
    d = settled(host, "s", lambda d: d["started"] == 1)
    assert [(f["instance"], f["outcome"]) for f in d["fires"]] == [(at("s", first),
                                                                     "existed")]
    assert jobs(host) == [at("s", first)]
    assert ok(host, "workflow", "status", "jobs", at("s", first))["state"] == "waiting"
