"""The schedule class's routes (wk-schedule/v1): create and its refusals, describe,
who may ask, and a request to a name never defined leaving nothing behind."""

from __future__ import annotations

from typing import Any

import pytest
from wkguest.errors import CallErrorKind
from wkguest.schedule.spec import Spec, SpecError
from wkguest.workflow.testing.fakes import START_MS

from .conftest import MINUTE, SchedHost

SPEC = {"target": "jobs", "cron": "0 3 * * *"}


@pytest.fixture(autouse=True)
def jobs_served(hosts: SchedHost) -> None:
    """The target of SPEC: a create checks that it is a workflow class served here."""
    hosts.wf.serve("jobs", lambda wf, inp: inp)


def test_create_answers_the_definition_with_its_defaults(hosts: SchedHost) -> None:
    doc = hosts.create("nightly", **SPEC, input={"full": True})
    assert {k: doc[k] for k in ("name", "target", "cron", "tz", "input", "overlap",
                                "catchup", "catchup_max", "grace_ms", "paused")} == {
        "name": "nightly", "target": "jobs", "cron": "0 3 * * *", "tz": "UTC",
        "input": {"full": True}, "overlap": "skip", "catchup": "one", "catchup_max": 10,
        "grace_ms": 60_000, "paused": False}
    assert doc["next_fires"] == [START_MS + 3 * 60 * MINUTE + d * 86_400_000
                                 for d in range(3)]
    assert hosts.backends["nightly"].alarm == doc["next_fires"][0]
    assert (doc["started"], doc["fires"], doc["created_at"]) == (0, [], START_MS)


def test_create_of_an_existing_schedule_is_409_and_changes_nothing(hosts: SchedHost) -> None:
    hosts.create("nightly", **SPEC)
    status, doc = hosts.call("nightly", "create", {**SPEC, "cron": "* * * * *"})
    assert (status, doc["error"], doc["cron"]) == (409, "exists", "0 3 * * *")
    assert "delete it first" in doc["message"]


@pytest.mark.parametrize(("msg", "message"), [
    ({"cron": "* * * * *"}, "target None: a class name"),
    ({**SPEC, "target": "Bad"}, "target 'Bad'"),
    ({**SPEC, "cron": "* * *"}, "3 fields, not 5"),
    ({**SPEC, "tz": "America/New_York"}, "no tz database"),
    ({**SPEC, "overlap": "buffer"}, "overlap 'buffer': one of skip, allow"),
    ({**SPEC, "catchup": "some"}, "catchup 'some': one of none, one, all"),
    ({**SPEC, "catchup_max": 0}, "catchup_max 0: a whole number from 1 to 1000"),
    ({**SPEC, "grace_ms": -1}, "grace_ms -1"),
    ({**SPEC, "every": 5}, "unknown field(s): every"),
    ({**SPEC, "cron": "0 0 30 2 *"}, "never fires"),
    ([1, 2], "a JSON object"),
])
def test_a_bad_create_is_400_naming_the_field_and_leaves_nothing(
        hosts: SchedHost, msg: Any, message: str) -> None:
    status, doc = hosts.call("s", "create", msg)
    assert (status, doc["error"]) == (400, "bad-request"), doc
    assert message in doc["message"]
    assert "s" not in hosts.backends


def test_refusals_of_who_asks_and_how(hosts: SchedHost) -> None:
    hosts.create("s", **SPEC)
    assert hosts.call("s", "describe", sender="public")[0] == 403
    assert hosts.call("s", "describe", sender="actor")[0] == 200
    assert hosts.call("s", "pause", method="GET")[1]["error"] == "method"
    assert hosts.call("s", "nope")[1]["error"] == "route"
    status, doc = hosts.call("s", "describe", raw=b"{not json")
    assert (status, doc["error"]) == (400, "bad-request")
    assert hosts.call("s", "describe", {"fires": 101})[0] == 400
    assert "s" in hosts.backends  # a defined schedule stays, whatever was refused


def test_an_unknown_name_is_404_and_leaves_nothing(hosts: SchedHost) -> None:
    for route in ("describe", "pause", "resume", "delete"):
        status, doc = hosts.call("ghost", route)
        assert (status, doc["error"]) == (404, "unknown"), route
        assert "ghost" not in hosts.backends


def test_pause_and_resume_twice_are_the_same_as_once(hosts: SchedHost) -> None:
    hosts.create("s", **SPEC)
    first = hosts.call("s", "pause")[1]
    assert hosts.call("s", "pause")[1]["paused"] is True
    assert hosts.call("s", "resume")[1]["next_fires"] == hosts.call("s", "resume")[1][
        "next_fires"]
    assert first["paused"] is True


def test_spec_round_trips_through_its_map() -> None:
    spec = Spec.from_message({**SPEC, "tz": "+02:00", "input": [1, "a"], "overlap": "allow",
                              "catchup": "all", "catchup_max": 3, "grace_ms": 0})
    assert Spec(**spec.to_map()) == spec
    assert spec.starts_missed == 3
    with pytest.raises(SpecError, match="input: more than"):
        Spec.from_message({**SPEC, "input": "x" * 70_000})


NOT_DECLARED = ("error: class 'plain' does not declare the protocol 'wk-workflow/v1' "
                "(it declares none); nothing was run")


@pytest.mark.parametrize(("target", "fails", "status", "error", "message"), [
    ("nosuch", None, 400, "not-served", "target 'nosuch' is not served here"),
    ("plain", ("not-declared", NOT_DECLARED), 400, "not-a-workflow",
     "target 'plain' is not a workflow class"),
    ("busy", ("refused", "refused: backpressure"), 503, "target-unchecked",
     "target 'busy' could not be checked: refused: backpressure"),
    # Told by the host's kind, not by the words: a reason that reads like another's.
    ("odd", ("refused", "refused: unknown: does not declare the protocol"), 503,
     "target-unchecked", "target 'odd' could not be checked"),
])
def test_a_create_whose_target_is_not_a_served_workflow_class_leaves_nothing(
        hosts: SchedHost, target: str, fails: tuple[CallErrorKind, str] | None, status: int,
        error: str, message: str) -> None:
    if fails is not None:
        hosts.call_fails[target] = fails
    got, doc = hosts.call("s", "create", {**SPEC, "target": target})
    assert (got, doc["error"]) == (status, error), doc
    assert message in doc["message"] and "nothing was recorded" in doc["message"]
    assert "s" not in hosts.backends


def test_the_check_of_a_workflow_class_starts_nothing(hosts: SchedHost) -> None:
    hosts.create("s", **SPEC)
    assert hosts.instances("jobs") == []
