"""The audit middleware and routes (host/net/audit.py) on an aiohttp app built as the
front door builds its own (the same two middlewares), with a stand-in for the actors:
what is recorded, what is not, and reading it back through `/_wk/audit`."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cbor2
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from wkhost.errors import BadRequest, PeerUnavailable
from wkhost.net import audit
from wkhost.net.frontdoor import _errors_middleware
from wkhost.net.operator import is_operator
from wkhost.net.tokens import Tokens
from wkhost.partition import Partition

TOKEN = "t" * 24
OP = {"Authorization": f"Bearer {TOKEN}"}
WF = "/wk-workflow/v1"
NOW = 1_764_633_000_000


def cbor_answer(doc: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(status=status, body=cbor2.dumps(doc), content_type="application/cbor")


async def actor(request: web.Request) -> web.Response:
    """A stand-in for the actors behind the front door."""
    is_operator(request)  # a wrong token: 401, as the front door answers
    await request.read()  # as the front door does before delivering
    path = request.path
    if path.startswith("/nope/"):
        raise BadRequest("bad class name 'nope!'")
    if path.startswith("/crash/"):
        raise RuntimeError("a bug")
    if path.endswith("/event") and "/gone/" in path:
        return cbor_answer({"error": "unknown", "message": "no such workflow instance"}, 404)
    if path.startswith("/big/"):
        return web.Response(text="x" * 70_000)
    if path.endswith("/start"):
        return cbor_answer({"state": "running", "created": True, "input_differs": False})
    if path.endswith("/event"):
        return cbor_answer({"recorded": True})
    if path.endswith("/cancel"):
        return cbor_answer({"state": "cancelled"})
    if path.endswith("/status"):
        return cbor_answer({"state": "waiting"})
    return web.Response(text="deposited 5\nmore\n")


class Peers:
    """The other processes of `--processes 3`: process 1 flushes, process 2 is down."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, str, str]] = []

    async def exchange(self, process: int, method: str, target: str) -> tuple[int, list[
            tuple[str, str]], bytes]:
        self.asked.append((process, method, target))
        if process == 2:
            raise PeerUnavailable("process 2, which serves this actor, did not answer")
        return 200, [], b'{"flushed": true}'


def make_app(tmp_path: Path, for_peers: bool = False, peers: Peers | None = None
             ) -> web.Application:
    with warnings.catch_warnings():  # the front door's keys are strings, as here
        warnings.simplefilter("ignore", web.NotAppKeyWarning)
        return _app(tmp_path, for_peers, peers)


def _app(tmp_path: Path, for_peers: bool, peers: Peers | None) -> web.Application:
    app = web.Application(middlewares=[_errors_middleware, audit.middleware])
    clock = SimpleNamespace(now_ms=lambda: NOW)
    app["host"] = SimpleNamespace(clock=clock, config=SimpleNamespace(
        data_dir=tmp_path, partition=Partition(0, 3 if peers else 1)))
    app["token"] = TOKEN
    app["tokens"] = Tokens(TOKEN)
    app["for_peers"] = for_peers
    app["peers"] = peers
    audit.add_routes(app)
    app.router.add_route("*", r"/{tail:[\s\S]*}", actor)
    return app


Client = TestClient[web.Request, web.Application]


def with_client(tmp_path: Path, body: Callable[[Client], Awaitable[None]],
                for_peers: bool = False, peers: Peers | None = None) -> None:
    async def go() -> None:
        async with TestClient(TestServer(make_app(tmp_path, for_peers, peers))) as client:
            await body(client)
    asyncio.run(go())


async def post(client: Client, path: str, msg: Any = None, headers: dict[str, str] | None
               = None, operator: bool = True) -> int:
    h = {"Content-Type": "application/cbor", **(OP if operator else {}), **(headers or {})}
    resp = await client.post(path, data=cbor2.dumps(msg or {}), headers=h)
    await resp.read()
    return resp.status


async def entries(client: Client, **query: str) -> list[dict[str, Any]]:
    resp = await client.get("/_wk/audit", params=query, headers=OP)
    assert resp.status == 200, await resp.text()
    doc = await resp.json()
    out: list[dict[str, Any]] = doc["entries"]
    return out


def test_each_action_is_recorded_with_its_target_route_answer_and_state(tmp_path: Path
                                                                       ) -> None:
    async def body(c: Client) -> None:
        await post(c, f"/orders/o%2F1{WF}/start", {"input": {"item": "book"}, "wait_ms": 0})
        await post(c, f"/orders/o%2F1{WF}/event", {"name": "approved", "payload": "x" * 100})
        await post(c, f"/orders/o%2F1{WF}/cancel", {"compensate": True})
        got = await entries(c)
        assert [(e["action"], e["target"], e["status"], e["state"], e["result"])
                for e in got] == [
            ("cancel", "orders/o/1", 200, "cancelled", "ok"),
            ("event", "orders/o/1", 200, None, "recorded"),
            ("start", "orders/o/1", 200, "running", "created, input_differs=false")]
        assert got[0]["detail"] == {"compensate": True}
        assert got[1]["detail"] == {"name": "approved", "payload": "x" * 79 + "…"}
        assert got[2]["detail"] == {"input": "<dict>", "wait_ms": 0}
        assert got[2]["path"] == f"{WF}/start" and got[2]["method"] == "POST"
        assert got[2]["at"] == NOW and got[2]["process"] == 0
    with_client(tmp_path, body)


def test_reads_the_publics_requests_and_a_wrong_token_are_not_recorded(tmp_path: Path
                                                                      ) -> None:
    async def body(c: Client) -> None:
        assert await post(c, f"/orders/o1{WF}/status") == 200  # a read, though a POST
        assert await post(c, f"/orders/o1{WF}/steps") == 200
        assert (await c.get(f"/orders/o1{WF}/status", headers=OP)).status == 200
        assert (await c.get("/ledger/main/calls", headers=OP)).status == 200
        assert await post(c, f"/orders/o1{WF}/start", operator=False) == 200
        bad = {"Authorization": "Bearer " + "x" * 24}
        assert await post(c, f"/orders/o1{WF}/start", headers=bad, operator=False) == 401
        assert await entries(c) == []
        assert await post(c, "/ledger/main/deposit") == 200  # not a protocol's: a call
        [e] = await entries(c)
        assert (e["action"], e["target"], e["result"]) == ("call", "ledger/main",
                                                           "deposited 5")
    with_client(tmp_path, body)


def test_a_failed_action_is_recorded_with_why(tmp_path: Path) -> None:
    async def body(c: Client) -> None:
        assert await post(c, f"/orders/gone{WF}/event", {"name": "approved"}) == 404
        assert await post(c, f"/nope/x{WF}/start") == 400  # the host's own refusal
        assert await post(c, f"/crash/x{WF}/start") == 500
        got = await entries(c)
        assert [(e["target"], e["status"], e["result"]) for e in got] == [
            ("crash/x", 500, "internal error in the host (see its log)"),
            ("nope/x", 400, "bad class name 'nope!'"),
            ("orders/gone", 404, "unknown: no such workflow instance")]
    with_client(tmp_path, body)


def test_a_big_answer_or_request_is_shown_by_its_size(tmp_path: Path) -> None:
    async def body(c: Client) -> None:
        await post(c, "/big/b1/put", {"name": "n", "blob": "y" * 70_000})
        [e] = await entries(c)
        assert (e["result"], e["detail"]) == ("70000 bytes", {})
    with_client(tmp_path, body)


def test_a_note_is_kept_on_the_row_and_a_bulk_records_a_line_of_its_own(tmp_path: Path
                                                                       ) -> None:
    async def body(c: Client) -> None:
        note = "bulk cancel --status waiting (2 instances)"
        resp = await c.post("/_wk/audit/note", json={"note": note, "target": "orders"},
                            headers=OP)
        assert resp.status == 200
        for oid in ("a", "b"):
            await post(c, f"/orders/{oid}{WF}/cancel", headers={audit.NOTE: note})
        got = await entries(c)
        assert [(e["action"], e["target"], e["note"]) for e in got] == [
            ("cancel", "orders/b", note), ("cancel", "orders/a", note),
            ("note", "orders", note)]
        for bad, why in (({"target": "orders"}, "note: give a non-empty text"),
                         ({"note": "x", "target": "Orders"}, "target: bad class name")):
            resp = await c.post("/_wk/audit/note", json=bad, headers=OP)
            assert resp.status == 400 and why in await resp.text()
        resp = await c.post("/_wk/audit/note", json={"note": "x"})
        assert resp.status == 403
    with_client(tmp_path, body)


def test_the_route_filters_pages_and_is_for_operators(tmp_path: Path) -> None:
    async def body(c: Client) -> None:
        for oid in ("a", "b", "c"):
            await post(c, f"/orders/{oid}{WF}/start")
        await post(c, f"/orders/a{WF}/event", {"name": "go"})
        await post(c, f"/ledger/main{WF}/start")
        assert [e["target"] for e in await entries(c, target="orders/a")] == ["orders/a"] * 2
        assert len(await entries(c, target="orders")) == 4
        assert [e["action"] for e in await entries(c, action="event")] == ["event"]
        assert len(await entries(c, since=str(NOW), until=str(NOW))) == 5
        assert await entries(c, since=str(NOW + 1)) == []
        assert len(await entries(c, since="-1000")) == 5  # back from the host's now
        seen, before = [], ""
        while True:
            page = await (await c.get("/_wk/audit", params={"limit": "2", "before": before},
                                      headers=OP)).json()
            seen += [e["target"] for e in page["entries"]]
            if page["next"] is None:
                break
            before = page["next"]
        assert len(seen) == 5 and len(set(seen)) == 4
        assert (await c.get("/_wk/audit")).status == 403
        for query, why in (({"limit": "0"}, "limit takes 1 to 1000"),
                           ({"limit": "x"}, "limit must be a whole number"),
                           ({"since": "yesterday"}, "since must be a whole number"),
                           ({"before": "12"}, "before must be a page's cursor"),
                           ({"target": "orders/"}, ""), ({"target": "Bad"}, "target:")):
            resp = await c.get("/_wk/audit", params=query, headers=OP)
            if query == {"target": "orders/"}:  # a class with an empty id: the class
                assert resp.status == 200
                continue
            assert resp.status == 400 and why in await resp.text(), query
    with_client(tmp_path, body)


def test_the_app_that_serves_other_processes_records_nothing(tmp_path: Path) -> None:
    """A request passed on from another process was recorded by the process it reached."""
    async def body(c: Client) -> None:
        assert await post(c, f"/orders/a{WF}/start") == 200
        resp = await c.post("/_wk/peer/audit/flush")
        assert resp.status == 200 and (await resp.json()) == {"flushed": True}
    with_client(tmp_path, body, for_peers=True)

    async def read(c: Client) -> None:
        assert await entries(c) == []
    with_client(tmp_path, read)


@pytest.mark.parametrize(("method", "path", "action"), [
    ("POST", f"/orders/o1{WF}/start", True), ("POST", f"/orders/o1{WF}/terminate", True),
    ("POST", f"/orders/o1{WF}/rescue?x=1", True), ("DELETE", "/kv/k/item", True),
    ("POST", f"/orders/o1{WF}/status", False), ("POST", f"/orders/o1{WF}/query", False),
    ("POST", "/schedules/s1/wk-schedule/v1/describe", False),
    ("POST", "/schedules/s1/wk-schedule/v1/pause", True),
    ("GET", f"/orders/o1{WF}/start", False), ("HEAD", "/kv/k/item", False),
    ("POST", "/_wk/clock/advance?ms=5", True), ("POST", "/_wk/audit/note", False),
    ("GET", "/_wk/actors/orders", False)])
def test_which_requests_are_actions(method: str, path: str, action: bool) -> None:
    from wkhost.net.audit_entry import is_action
    assert is_action(method, path) is action


def test_an_entry_is_json_as_the_cli_prints_it(tmp_path: Path) -> None:
    async def body(c: Client) -> None:
        await post(c, f"/orders/a{WF}/start")
        doc = await (await c.get("/_wk/audit", headers=OP)).json()
        assert json.loads(json.dumps(doc)) == doc and doc["unflushed"] == []
        assert set(doc["entries"][0]) == {
            "at", "took_ms", "process", "action", "method", "cls", "actor_id", "target",
            "path", "status", "result", "state", "note", "detail", "who"}
        assert doc["entries"][0]["who"] == "admin"  # the admin token's name
    with_client(tmp_path, body)


def test_a_read_asks_the_other_processes_to_flush_and_names_one_that_did_not(
        tmp_path: Path) -> None:
    peers = Peers()

    async def body(c: Client) -> None:
        await post(c, f"/orders/a{WF}/start")
        doc = await (await c.get("/_wk/audit", headers=OP)).json()
        assert [e["target"] for e in doc["entries"]] == ["orders/a"]
        assert doc["unflushed"] == [2]
        assert peers.asked == [(1, "POST", "/_wk/peer/audit/flush"),
                               (2, "POST", "/_wk/peer/audit/flush")]
    with_client(tmp_path, body, peers=peers)


def test_a_log_that_cannot_be_opened_is_a_507_for_its_reader(tmp_path: Path) -> None:
    (tmp_path / "_host" / "audit.db").mkdir(parents=True)  # where the file should be

    async def body(c: Client) -> None:
        assert await post(c, f"/orders/a{WF}/start") == 200  # the action is not refused
        resp = await c.get("/_wk/audit", headers=OP)
        assert resp.status == 507 and "audit log could not be opened" in await resp.text()
    with_client(tmp_path, body)
