"""The front door of a real `wkhost serve`: routing, statuses, senders, backpressure."""

from __future__ import annotations

import json
import threading
from urllib.parse import quote

from .conftest import MakeServer
from .server import Server


def test_routing_passes_method_path_query_headers_and_body(server: Server) -> None:
    status, _, data = server.request(
        "PUT", "/probe/a%2Fb%20c/who%61mi?q=1&r=%2F", b"{}",
        headers={"X-Custom": "yes"})
    assert status == 200
    who = json.loads(data)
    assert who["self"] == ["probe", "a/b c"]
    assert who["method"] == "PUT" and who["path"] == "/whoami"
    assert who["query"] == "q=1&r=%2F"
    assert ["x-custom", "yes"] in who["headers"]


def test_a_body_round_trips_through_the_front_door(server: Server) -> None:
    body = bytes(range(256)) * 4096
    status, headers, data = server.request("POST", "/probe/e/echo", body)
    assert status == 200 and data == body


def test_error_statuses_have_one_line_reasons_and_no_traceback(make_server: MakeServer) -> None:
    s = make_server(extra=["--cpu-budget-ms", "20", "--max-body-kb", "64"])
    cases = [
        (s.request("GET", "/nosuch/a/x"), 404),
        (s.request("GET", "/inner/a/whoami"), 403),
        (s.request("POST", "/probe/a/echo", b"x" * (65 * 1024)), 413),
        (s.request("POST", "/probe/a/trap", b""), 500),
        (s.request("POST", "/probe/a/spin", b""), 503),
        (s.request("GET", "/probe/" + "x" * 300 + "/now"), 400),
        (s.request("GET", "/probe"), 400),
    ]
    for (status, _, body), expected in cases:
        assert status == expected, (status, body)
        text = body.decode()
        assert text.count("\n") == 1 and "Traceback" not in text, text
    assert s.request("GET", "/probe/a/now")[0] == 200  # and it still serves


def test_no_header_or_body_can_forge_the_sender(server: Server) -> None:
    forged = {"X-Wk-Sender": "operator", "X-Wasmkeep-Caller": "probe/admin",
              "Forwarded": "for=operator"}
    status, body = server.actor("probe", "f", "GET", "/whoami", {"sender": "operator"},
                                operator=False, headers=forged)
    assert status == 200 and body["sender"] == "public" and body["actor"] is None
    status, _, _ = server.request("GET", "/probe/f/whoami",
                                  headers={"Authorization": "Bearer not-the-token"})
    assert status == 401
    status, body = server.actor("probe", "f", "GET", "/whoami")
    assert body["sender"] == "operator"
    assert not any(k == "authorization" for k, _ in body["headers"])  # the token is hidden


def test_an_internal_class_is_closed_to_the_public_and_open_to_actors(server: Server) -> None:
    assert server.actor("inner", "i", "GET", "/whoami", operator=False)[0] == 403
    status, body = server.actor("probe", "a", "POST", "/call",
                                {"cls": "inner", "id": "i", "path": "/whoami"}, operator=False)
    assert status == 200 and body["status"] == 200
    who = json.loads(body["body"])
    assert who["sender"] == "actor" and who["actor"] == ["probe", "a"]


def test_backpressure_refuses_with_retry_after(make_server: MakeServer) -> None:
    s = make_server(extra=["--wall-budget-ms", "1500", "--cpu-budget-ms", "100000",
                           "--max-queue-per-actor", "2"])
    results: list[tuple[int, dict[str, str]]] = []
    lock = threading.Lock()

    def busy() -> None:
        status, headers, _ = s.request("POST", "/probe/hot/spin-wall?ms=100000000", b"")
        with lock:
            results.append((status, headers))

    threads = [threading.Thread(target=busy) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    refused = [h for status, h in results if status == 503 and "Retry-After" in h]
    assert len(results) == 8 and refused, results
    assert s.request("GET", "/probe/other/now")[0] == 200


def test_percent_encoded_ids_reach_the_same_actor(server: Server) -> None:
    actor_id = "ü/../x y"
    server.actor("probe", actor_id, "GET", "/now")
    status, body = server.actor("probe", actor_id, "GET", "/whoami")
    assert body["self"] == ["probe", actor_id]
    status, _, data = server.request("GET", "/_wk/actors/probe", operator=True)
    assert actor_id in json.loads(data)["ids"]
    assert quote(actor_id, safe="") != actor_id
