"""Requests in flight together (WIT `overlap`, wkguest.overlap) through a real server:
overlap shown by the peak of requests a local site held at once."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from .conftest import MakeServer
from .holding_site import HoldingSite, holding_site
from .server import Server


@pytest.fixture
def site() -> Iterator[HoldingSite]:
    with holding_site() as s:
        yield s


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that takes connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def served(make_server: MakeServer, site: HoldingSite, silent_port: int) -> Server:
    return make_server(extra=["--allow-http", site.address,
                              "--allow-http", f"127.0.0.1:{silent_port}"])


def _fetch(site: HoldingSite, path: str, **kw: object) -> dict[str, object]:
    return {"fetch": {"url": site.url(path), **kw}}


def test_five_fetches_are_held_at_once_and_answer_in_order(served: Server,
                                                            site: HoldingSite) -> None:
    site.reset(want=5)
    status, body = served.actor("probe", "fan", "POST", "/overlap",
                                {"requests": [_fetch(site, f"/r{i}") for i in range(5)]})
    assert status == 200, body
    assert site.peak == 5
    assert [a["body"] for a in body["answers"]] == [f"GET /r{i}" for i in range(5)]


def test_calls_overlap_and_keep_the_call_rules(served: Server, site: HoldingSite) -> None:
    site.reset(want=3)
    slow = [{"call": {"cls": "inner", "id": f"i{i}", "path": "/fetch",
                      "body": f'{{"url": "{site.url(f"/c{i}")}"}}'}} for i in range(3)]
    again = {"call": {"cls": "probe", "id": "caller", "path": "/whoami"}}
    unknown = {"call": {"cls": "nobody", "id": "x", "path": "/"}}
    status, body = served.actor("probe", "caller", "POST", "/overlap",
                                {"requests": [*slow, again, unknown]})
    assert status == 200, body
    assert site.peak == 3
    answers = body["answers"]
    assert all(a["status"] == 200 and f"GET /c{i}" in a["body"]
               for i, a in enumerate(answers[:3])), answers
    assert answers[3]["error_kind"] == "refused" and "re-entrant" in answers[3]["error"]
    assert answers[4]["error_kind"] == "unknown-class", answers[4]


def test_each_request_fails_on_its_own(served: Server, site: HoldingSite,
                                       silent_port: int) -> None:
    site.reset(want=2)
    silent = {"fetch": {"url": f"http://127.0.0.1:{silent_port}/", "timeout_ms": 300}}
    status, body = served.actor("probe", "mixed", "POST", "/overlap", {"requests": [
        _fetch(site, "/ok"), {"fetch": {"url": "http://10.0.0.1/"}}, silent,
        _fetch(site, "/also")]})
    assert status == 200, body
    kinds = [a.get("error_kind") or a["status"] for a in body["answers"]]
    assert kinds == [200, "denied", "timeout", 200], body


def test_past_64_in_flight_a_request_is_refused_and_the_rest_go_on(
        served: Server, site: HoldingSite) -> None:
    site.reset(want=64)
    many = [_fetch(site, f"/m{i}", method="POST") for i in range(66)]
    status, body = served.actor("probe", "many", "POST", "/overlap", {"requests": many})
    assert status == 200, body
    answers = body["answers"]
    assert site.peak == 64
    assert [a["status"] for a in answers[:64]] == [200] * 64
    for a in answers[64:]:
        assert a["error_kind"] == "denied" and "64 requests are in flight" in a["error"], a
