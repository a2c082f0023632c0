"""Schedules fired by their alarms on a fake clock: on-time starts with the input, the
overlap policies, catch-up after downtime (none, one, all capped), pause, resume and
delete, and a crash at a fire that never makes it start twice."""

from __future__ import annotations

from typing import Any

from wkguest import workflow
from wkguest.workflow.testing.fakes import START_MS

from .conftest import MINUTE, SchedHost

DAY = 86_400_000
EVERY_10 = "*/10 * * * *"


def job(wf: workflow.Run, inp: Any) -> Any:
    """Waits for "done" when asked to, so that a test can keep it unfinished."""
    if inp and inp.get("wait"):
        wf.wait_for_event("done", DAY)
    return inp


def at(minutes: int) -> str:
    """The instance id of schedule "s" at 00:MM of the test clock's day (2026-01-01)."""
    return f"s-2026-01-01T{minutes // 60:02d}:{minutes % 60:02d}Z"


def make(hosts: SchedHost, **spec: Any) -> dict[str, Any]:
    hosts.wf.serve("jobs", job)
    return hosts.create("s", **{"target": "jobs", "cron": EVERY_10, **spec})


def outcomes(hosts: SchedHost) -> list[tuple[str, str]]:
    return [(f["instance"], f["outcome"]) for f in hosts.describe("s")["fires"]][::-1]


def test_a_fire_on_time_starts_one_instance_with_the_input(hosts: SchedHost) -> None:
    doc = make(hosts, input={"n": 1})
    assert doc["created"] is True
    assert doc["next_fires"] == [START_MS + 10 * MINUTE, START_MS + 20 * MINUTE,
                                 START_MS + 30 * MINUTE]
    hosts.advance(10 * MINUTE)
    assert hosts.instances("jobs") == [at(10)]
    assert hosts.wf.client("jobs").status(at(10)).output == {"n": 1}
    hosts.advance(10 * MINUTE)
    assert hosts.instances("jobs") == [at(10), at(20)]
    d = hosts.describe("s")
    assert (d["started"], d["skipped"], d["missed"], d["last_instance"]) == (2, 0, 0, at(20))
    assert outcomes(hosts) == [(at(10), "started"), (at(20), "started")]


def test_overlap_skip_starts_nothing_while_the_last_instance_is_unfinished(
        hosts: SchedHost) -> None:
    make(hosts, input={"wait": True}, overlap="skip")
    hosts.advance(10 * MINUTE)
    hosts.advance(10 * MINUTE)
    assert hosts.instances("jobs") == [at(10)]
    fires = hosts.describe("s")["fires"]
    assert (fires[0]["outcome"], fires[0]["note"]) == ("skipped", f"{at(10)} is waiting")
    hosts.wf.client("jobs").send_event(at(10), "done")
    hosts.run_due()
    assert hosts.wf.client("jobs").status(at(10)).state == "completed"
    hosts.advance(10 * MINUTE)
    assert hosts.instances("jobs") == [at(10), at(30)]
    assert outcomes(hosts) == [(at(10), "started"), (at(20), "skipped"), (at(30), "started")]


def test_overlap_allow_starts_every_fire(hosts: SchedHost) -> None:
    make(hosts, input={"wait": True}, overlap="allow")
    for _ in range(3):
        hosts.advance(10 * MINUTE)
    assert hosts.instances("jobs") == [at(10), at(20), at(30)]


def down_for_an_hour(hosts: SchedHost, **spec: Any) -> dict[str, Any]:
    """The first fire at 00:10 handled at 01:05: 00:10 .. 01:00 are all past."""
    make(hosts, **spec)
    hosts.advance(65 * MINUTE)
    return hosts.describe("s")


def test_catch_up_none_starts_none_of_the_missed_fires(hosts: SchedHost) -> None:
    d = down_for_an_hour(hosts, catchup="none")
    assert hosts.instances("jobs") == []
    assert (d["started"], d["missed"]) == (0, 6)
    assert d["next_fires"][0] == START_MS + 70 * MINUTE
    hosts.advance(5 * MINUTE)
    assert hosts.instances("jobs") == [at(70)]


def test_catch_up_one_starts_the_newest_missed_fire(hosts: SchedHost) -> None:
    d = down_for_an_hour(hosts, catchup="one")
    assert hosts.instances("jobs") == [at(60)]
    assert (d["started"], d["missed"]) == (1, 5)
    assert outcomes(hosts)[-2:] == [(at(50), "missed"), (at(60), "started")]


def test_catch_up_all_starts_at_most_the_cap_newest_first_kept(hosts: SchedHost) -> None:
    d = down_for_an_hour(hosts, catchup="all", catchup_max=4, overlap="allow")
    assert hosts.instances("jobs") == [at(30), at(40), at(50), at(60)]
    assert (d["started"], d["missed"]) == (4, 2)


def test_catch_up_all_with_overlap_skip_starts_only_the_first(hosts: SchedHost) -> None:
    # Each start only records the instance: it runs in its own event, after the fire.
    d = down_for_an_hour(hosts, catchup="all", input={"wait": True})
    assert hosts.instances("jobs") == [at(10)]
    assert (d["started"], d["skipped"], d["missed"]) == (1, 5, 0)


def test_a_fire_late_within_its_grace_is_on_time(hosts: SchedHost) -> None:
    make(hosts, catchup="none", grace_ms=2 * MINUTE)
    hosts.advance(11 * MINUTE)
    assert hosts.instances("jobs") == [at(10)]


def test_pause_fires_nothing_and_resume_does_not_catch_up(hosts: SchedHost) -> None:
    make(hosts, catchup="all")
    status, doc = hosts.call("s", "pause")
    assert (status, doc["paused"], doc["next_fires"]) == (200, True, [])
    assert hosts.backends["s"].alarm is None
    hosts.advance(35 * MINUTE)
    assert hosts.instances("jobs") == []
    status, doc = hosts.call("s", "resume")
    assert (status, doc["paused"], doc["next_fires"][0]) == (200, False, START_MS + 40 * MINUTE)
    hosts.advance(5 * MINUTE)
    assert hosts.instances("jobs") == [at(40)]


def test_delete_removes_the_schedule_and_keeps_its_instances(hosts: SchedHost) -> None:
    make(hosts)
    hosts.advance(10 * MINUTE)
    assert hosts.call("s", "delete") == (200, {"name": "s", "deleted": True})
    assert "s" not in hosts.backends
    hosts.advance(30 * MINUTE)
    assert hosts.instances("jobs") == [at(10)]
    assert hosts.call("s", "describe")[0] == 404
    assert "s" not in hosts.backends  # the actor the request made is gone again


def test_a_crash_after_the_start_before_its_record_starts_no_second(
        hosts: SchedHost) -> None:
    make(hosts, overlap="skip")
    b = hosts.backends["s"]
    b.fail_when = lambda method, sql: "wk:schedule-fired" in sql
    hosts.clock.jump(10 * MINUTE)
    assert hosts.fire("s") is False  # the start went through; its record did not
    assert hosts.instances("jobs") == [at(10)]
    b.fail_when = None
    b.power_loss()  # and nothing since the plan was synced
    hosts.advance(1000)  # the host retries the alarm
    assert hosts.instances("jobs") == [at(10)]
    assert outcomes(hosts) == [(at(10), "existed")]
    assert hosts.describe("s")["started"] == 1
    hosts.advance(10 * MINUTE)
    assert hosts.instances("jobs") == [at(10), at(20)]


def test_a_crash_before_the_plan_commits_plans_again(hosts: SchedHost) -> None:
    make(hosts)
    b = hosts.backends["s"]
    b.fail_when = lambda method, sql: method == "exec_durable" and "wk:schedule-plan" in sql
    hosts.clock.jump(10 * MINUTE)
    assert hosts.fire("s") is False
    assert hosts.instances("jobs") == [] and hosts.describe("s")["fires"] == []
    b.fail_when = None
    hosts.advance(1000)
    assert hosts.instances("jobs") == [at(10)]


def test_a_target_no_longer_served_is_retried_until_it_is_again(hosts: SchedHost) -> None:
    hosts.wf.serve("later", job)
    hosts.create("s", target="later", cron=EVERY_10)  # a create checks it is served
    served = hosts.wf.classes.pop("later")  # then a deploy without it
    hosts.clock.jump(10 * MINUTE)
    assert hosts.fire("s") is False
    fires = hosts.describe("s")["fires"]
    assert fires[0]["outcome"] == "planned"
    assert "retrying" in fires[0]["note"]
    assert "no actor class named 'later'" in fires[0]["note"]
    hosts.wf.classes["later"] = served
    hosts.advance(1000)
    assert hosts.instances("later") == [at(10)]
    assert outcomes(hosts) == [(at(10), "started")]


def test_a_storage_fault_in_a_request_is_503(hosts: SchedHost) -> None:
    make(hosts)
    hosts.backends["s"].fail_when = lambda method, sql: True
    status, doc = hosts.call("s", "describe")
    assert (status, doc["error"]) == (503, "storage")
