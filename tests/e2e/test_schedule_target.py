"""A schedule's target is checked when it is created (issue 36, item 11): a class this
server does not serve, or one that is not a workflow class, is refused at once, naming
the class (and, through `wkhost schedule create`, what the server serves), and nothing
is recorded; before, the create was taken and each fire was retried for ever. The check
is the schedule class's own, so every way to create one gets it: the CLI, an operator's
HTTP request, another actor's call.

Served: `jobs` (tests/guests/wf_events.py, a workflow class), `probe` (not one) and
`schedules`, on the fake clock.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wkguest.schedule import APP

from ..conftest import CACHE_DIR
from .reliability_support import Host
from .server import REPO

EVERY_10 = "*/10 * * * *"
DAY = 86_400_000


@pytest.fixture(scope="module")
def components(build_guest: Callable[[str | Path], Path]) -> dict[str, Path]:
    return {"jobs": build_guest("wf_events"), "probe": build_guest("probe"),
            "schedules": build_guest(APP)}


@pytest.fixture
def host(components: dict[str, Path], tmp_path: Path) -> Iterator[Host]:
    h = Host(tmp_path / "data", {"jobs": components["jobs"], "probe": components["probe"]},
             ["--schedules"], {"jobs": "internal"}, {"WKHOST_CACHE_DIR": str(CACHE_DIR)})
    with contextlib.ExitStack() as stack:
        stack.callback(h.close)
        yield h.start()


def wkhost(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wkhost.cli", *args, "--server", host.url,
                           "--data", str(host.data)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def schedules(host: Host) -> list[Any]:
    out = wkhost(host, "schedule", "list", "--json")
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def nothing_recorded(host: Host) -> None:
    assert schedules(host) == []
    assert host.ids("schedules") == []
    assert host.ids("jobs") == [] and host.ids("probe") == []  # the check left nothing


def test_a_class_not_served_is_refused_naming_it_and_what_is_served(host: Host) -> None:
    out = wkhost(host, "schedule", "create", "s", "nosuch", EVERY_10)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "'nosuch'" in out.stderr and "not served" in out.stderr, out.stderr
    assert "jobs, probe, schedules" in out.stderr, out.stderr
    assert "nothing was recorded" in out.stderr
    nothing_recorded(host)
    host.advance(DAY)  # no schedule fires, or retries, behind the refusal
    nothing_recorded(host)


def test_a_class_that_is_not_a_workflow_class_is_refused(host: Host) -> None:
    out = wkhost(host, "schedule", "create", "s", "probe", EVERY_10)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "'probe'" in out.stderr and "not a workflow class" in out.stderr, out.stderr
    nothing_recorded(host)


@pytest.mark.parametrize(("target", "error"), [("nosuch", "not-served"),
                                               ("probe", "not-a-workflow")])
def test_every_way_to_create_one_is_checked(host: Host, target: str, error: str) -> None:
    msg = {"target": target, "cron": EVERY_10}
    status, doc = host.actor("schedules", "s", "POST", "/wk-schedule/v1/create", msg)
    assert (status, doc["error"]) == (400, error), doc
    assert repr(target) in doc["message"]
    # From another actor: the probe calls the schedule class.
    status, doc = host.actor("probe", "caller", "POST", "/call", {
        "cls": "schedules", "id": "s", "path": "/wk-schedule/v1/create",
        "body": json.dumps(msg)})
    assert status == 200 and doc["status"] == 400, doc
    assert json.loads(doc["body"])["error"] == error
    assert schedules(host) == [] and host.ids("schedules") == []


def test_a_workflow_class_is_taken_and_fires(host: Host) -> None:
    out = wkhost(host, "schedule", "create", "s", "jobs", EVERY_10, "--input",
                 '{"items": []}', "--json")
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)["next_fires"][0]
    assert [d["name"] for d in schedules(host)] == ["s"]
    assert host.ids("jobs") == []  # the check started nothing
    host.advance(max(0, first - host.advance(0)))
    status, d = host.actor("schedules", "s", "POST", "/wk-schedule/v1/describe", {})
    assert status == 200 and d["started"] == 1, d
    assert len(host.ids("jobs")) == 1
