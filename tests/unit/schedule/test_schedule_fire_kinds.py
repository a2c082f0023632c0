"""A fire whose start call the host refuses is told by the error's kind, never by its
words (schedule/fire.py): a target that no longer declares the workflow protocol
("not-declared") fails the fire; any other failure, whatever its text, is retried."""

from __future__ import annotations

from .conftest import MINUTE, SchedHost
from .test_schedule_fires import at, make

REFUSAL = ("error: class 'jobs' does not declare the protocol 'wk-workflow/v1' "
           "(it declares none); nothing was run")


def test_a_target_that_no_longer_declares_the_protocol_fails_the_fire(
        hosts: SchedHost) -> None:
    make(hosts)  # the create checks it is a workflow class
    hosts.call_fails["jobs"] = ("not-declared", REFUSAL)  # then a deploy of a plain class
    hosts.clock.jump(10 * MINUTE)
    hosts.fire("s")
    fire = hosts.describe("s")["fires"][0]
    assert (fire["instance"], fire["outcome"]) == (at(10), "failed"), fire
    assert fire["note"].startswith("not-a-workflow: "), fire
    assert REFUSAL in fire["note"], fire


def test_another_failure_reading_the_same_is_retried(hosts: SchedHost) -> None:
    make(hosts)
    hosts.call_fails["jobs"] = ("refused", REFUSAL)
    hosts.clock.jump(10 * MINUTE)
    assert hosts.fire("s") is False
    fire = hosts.describe("s")["fires"][0]
    assert fire["outcome"] == "planned" and "retrying" in fire["note"], fire
    del hosts.call_fails["jobs"]
    hosts.advance(1000)
    assert hosts.instances("jobs") == [at(10)]

