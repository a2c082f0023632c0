"""Steps whose waits overlap, and their fetches' idempotency keys, on CPython and, through
the switch, in the sandbox: the Cloudflare-shaped `step.all` of async branches
(tests/guests/cf_overlap.py) and wf.step's `idempotency_keys` (tests/guests/kit_keys.py).
Overlap itself is measured by tests/e2e/test_overlap_workflows.py (the test kit answers
a fetch as it starts); here, what a user's test sees: the values and the keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from wkguest.types import Response
from wkhost.testkit import Fetch, Kit, WorkflowClass

REPO = Path(__file__).resolve().parents[2]
GUESTS = REPO / "tests" / "guests"


class Seen:
    def __init__(self) -> None:
        self.fetches: list[tuple[str, str, str | None]] = []

    def answer(self, req: Fetch) -> Response:
        key = next((v for k, v in req.headers if k.lower() == "idempotency-key"), None)
        self.fetches.append((req.method, req.url.split("/", 3)[3], key))
        return Response.text(f"{req.method} {req.url.split('/', 3)[3]}")

    def keys(self, path: str) -> list[tuple[str, str | None]]:
        return [(m, k) for m, p, k in self.fetches if p.split("?")[0] == path]


@pytest.fixture(scope="module")
def seen() -> Seen:
    return Seen()


@pytest.fixture(scope="module", params=["cpython", pytest.param("sandbox",
                                                                  marks=pytest.mark.e2e)])
def kit(request: pytest.FixtureRequest, seen: Seen) -> Iterator[Kit]:
    kit = Kit(sandbox=request.param == "sandbox")
    kit.on_fetch("https://quotes.example.test/", seen.answer)
    kit.on_fetch("https://keys.example.test/", seen.answer)
    kit.serve_workflow("quotes", GUESTS / "cf_overlap.py")
    kit.serve_workflow("keys", GUESTS / "kit_keys.py")
    try:
        yield kit
    finally:
        kit.close()


def test_step_all_of_async_branches(kit: Kit, seen: Seen) -> None:
    seen.fetches.clear()
    wf = WorkflowClass(kit, "quotes").instance("q1")
    run = wf.start().run_id
    st = wf.wait_for_status("completed")
    assert st.output["quotes"] == ["POST a", "POST b?attempt=1", "POST c"]
    assert st.output["pay"] == ["POST pay", "GET pay", "POST pay"]
    # the group is position 0: branch i's key is "<run>-0.i"; "pay" is position 1
    assert seen.keys("a") == [("POST", f"{run}-0.0")]
    assert seen.keys("b") == [("POST", f"{run}-0.1")]
    assert seen.keys("c") == [("POST", f"{run}-0.2")]
    assert seen.keys("pay") == [("POST", f"{run}-1"), ("GET", None), ("POST", f"{run}-1-2")]
    assert seen.keys("own") == [("POST", "mine")]


def test_which_fetches_carry_keys(kit: Kit, seen: Seen) -> None:
    seen.fetches.clear()
    wf = WorkflowClass(kit, "keys").instance("k1")
    run = wf.start().run_id
    st = wf.wait_for_status("completed")
    assert st.output == [[200, 200]] * 3 + [[200, 200]]
    assert seen.keys("default") == [("POST", f"{run}-0"), ("PUT", f"{run}-0-2")]
    assert seen.keys("none") == [("POST", None), ("PUT", None)]
    assert seen.keys("only_put") == [("POST", None), ("PUT", f"{run}-2")]
    assert sorted(seen.keys("alone")) == [("POST", f"{run}-3-1.0"), ("POST", f"{run}-3-1.1")]


def test_a_run_continued_as_new_keys_its_requests_anew(kit: Kit, seen: Seen) -> None:
    seen.fetches.clear()
    wf = WorkflowClass(kit, "keys").instance("k2")
    first = wf.start({"again": True}).run_id
    st = wf.wait_for_status("completed")
    second = st.run_id
    assert second != first and st.previous_run_id == first
    assert seen.keys("default") == [("POST", f"{first}-0"), ("PUT", f"{first}-0-2"),
                                    ("POST", f"{second}-0"), ("PUT", f"{second}-0-2")]


def test_plain_code_in_a_branch_overlaps_requests_of_its_own(kit: Kit, seen: Seen) -> None:
    """overlap.run inside a branch's coroutine, while the other branch's request is in
    flight: each loop gets its own requests' ends, and the nested ones are keyed."""
    seen.fetches.clear()
    wf = WorkflowClass(kit, "keys").instance("k3")
    run = wf.start({"nested": True}).run_id
    assert wf.wait_for_status("completed").output == [[200, 200, 200]] * 2
    assert sorted(k for _, k in seen.keys("nested")) == [
        f"{run}-0.{i}-2.{j}" for i in range(2) for j in range(2)]
