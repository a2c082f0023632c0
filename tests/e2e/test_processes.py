"""`wkhost serve --processes N`: one host in N processes, each owning a share of the actors.

Real servers with the workflow example. Which process owns an id is fixed (the first byte
of its sha256, host/partition.py): here o1, ledger's `main` and app's `web` are process
1's, o2 and o3 process 0's. So app/web -> orders/o2 -> ledger/main crosses between the
processes both ways, and a client's request reaches either process, whichever accepts it.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import cbor2
from wkhost.net.cores import core_shares
from wkhost.partition import Partition

from . import workflow_support
from .conftest import MakeServer
from .server import COMPILED, REPO, Server
from .test_actor_calls import chain
from .test_workflows import main_scenario
from .workflow_support import (
    HOUR,
    INTERNAL,
    Shop,
    finished,
    in_state,
    wait_until,
    waiting_for,
)

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name

TWO = ["--processes", "2"]


def test_the_ids_used_here_are_where_this_module_says() -> None:
    owner = Partition(0, 2).owner
    assert [owner(i) for i in ("o1", "main", "web", "o2", "o3")] == [1, 1, 1, 0, 0]


def shop(make_server: MakeServer, wasm: dict[str, Path], data: Path, processes: int = 2
         ) -> Shop:
    actors = {"orders": wasm["orders"], "ledger": wasm["ledger"], "app": wasm["app"]}
    extra = ["--processes", str(processes)] if processes > 1 else []
    return Shop(make_server(actors=actors, access=INTERNAL, data=data, extra=extra))


def children(server: Server) -> list[int]:
    assert server.proc is not None
    path = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children")
    return [int(p) for p in path.read_text().split()]


def process_of(pid: int) -> int:
    """Which process of the host `pid` is, from its command line (--process K/N)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return int(args[args.index(b"--process") + 1].split(b"/")[0])


def thread_cores(pid: int) -> list[set[int]]:
    """The cores each thread of process `pid` may run on."""
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]


def test_each_process_runs_on_its_own_cores_unless_told_otherwise(
        make_server: MakeServer, tmp_path: Path) -> None:
    # The servers inherit this process's cores; on one core, nothing can be pinned.
    mine = os.sched_getaffinity(0)
    shares = core_shares(mine, 2)
    for setting in ("auto", "off"):
        server = make_server(extra=[*TWO, "--cpu-affinity", setting], data=tmp_path / setting)
        for actor_id in ("a", "p2"):  # one of each process's: its event threads start
            assert server.actor("probe", actor_id, "POST", "/echo", {"x": 1})[0] == 200
        for pid in children(server):
            want = set(shares[process_of(pid)]) if shares and setting == "auto" else mine
            cores = thread_cores(pid)
            assert len(cores) > 3 and all(c == want for c in cores), (setting, want, cores)
        if shares and setting == "auto":
            assert set().union(*shares) == mine and sum(map(len, shares)) == len(mine)
        server.stop()


def test_orders_run_across_processes_and_are_listed_together(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    s = shop(make_server, workflow_wasm, tmp_path / "data")
    assert len(children(s.server)) == 2
    for oid in ("o1", "o2"):  # each in its own process; ledger/main is process 1's
        main_scenario(s, oid)
    assert sorted(s.actor_ids()) == ["o1", "o2"]  # listed from both processes
    status, _, body = s.server.request("GET", "/_wk/health")
    assert status == 200 and json.loads(body)["processes"] == 2


def test_a_process_killed_comes_back_and_its_actors_lose_nothing(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    s = shop(make_server, workflow_wasm, tmp_path / "data")
    for oid in ("o1", "o2"):
        s.app_start(oid, cool_off_ms=HOUR)
        s.wait_for(oid, in_state("waiting"))
    victim = next(pid for pid in children(s.server) if process_of(pid) == 0)
    os.kill(victim, signal.SIGKILL)
    # Until it is back, its actors are unavailable, and say so; the others are served.
    status, headers, body = s.server.request(
        "POST", "/orders/o2/wk-workflow/v1/status", b"", operator=True)
    assert status == 503 and "Retry-After" in headers, body
    assert s.status("o1")["state"] == "waiting"
    wait_until(lambda: victim not in children(s.server) and len(children(s.server)) == 2,
               what="a new process 0")
    wait_until(lambda: s.wk("o2", "status")[0] == 200, what="o2 served again")
    shares = core_shares(os.sched_getaffinity(0), 2)
    if shares:  # the new process 0 runs where the first one did
        again = next(pid for pid in children(s.server) if process_of(pid) == 0)
        assert all(c == set(shares[0]) for c in thread_cores(again))
    for oid in ("o1", "o2"):  # the sleep is still recorded, and its alarm fires
        s.drive(oid, waiting_for("approved"))
        # app/web (process 1) calls o2 through a connection made before the kill
        assert s.approve(oid) == (200, {"sent": "approved"})
        assert s.drive(oid, finished)["state"] == "completed"
    assert "process 0 exited (signal 9)" in "\n".join(s.server.log)


def test_sigterm_stops_every_process_cleanly(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = shop(make_server, workflow_wasm, data)
    s.app_start("o2")
    pids = children(s.server)
    assert s.server.stop() == 0
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert not list((data / "_host").glob("process-*/running"))  # each stopped cleanly
    assert not list((data / "_host").glob("process-*/peer.sock"))


def test_the_supervisor_killed_takes_its_processes_with_it(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    s = shop(make_server, workflow_wasm, tmp_path / "data")
    pids = children(s.server)
    s.server.kill9()
    end = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_another_number_of_processes_finds_every_actor_and_alarm(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    """1 process, then 2, then 1 again: each layout finds the actors the others made
    (by the third run, the one process's index from the first is stale), and their
    alarms: the sleeps all end."""
    data = tmp_path / "data"
    made: list[str] = []
    for processes, new in ((1, ["o1", "o2"]), (2, ["o3", "o4"])):
        s = shop(make_server, workflow_wasm, data, processes)
        assert sorted(s.actor_ids()) == made
        for oid in new:
            s.app_start(oid, cool_off_ms=HOUR)
            s.wait_for(oid, in_state("waiting"))
        made += new
        assert s.server.stop() == 0
    s = shop(make_server, workflow_wasm, data, 1)
    assert sorted(s.actor_ids()) == made
    s.advance_to(max(s.status(oid)["wake_at"] for oid in made))
    for oid in made:
        s.wait_for(oid, waiting_for("approved"))


def test_the_peer_routes_are_not_served_to_clients(
        make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path) -> None:
    s = shop(make_server, workflow_wasm, tmp_path / "data")
    for path in ("/_wk/peer/call", "/_wk/peer/clock?at=1"):
        status, _, _ = s.server.request("POST", path, b"\xa0", operator=True)
        assert status == 404
    # Nor through a request passed on to another process: its path starts with a class.
    before = s.now()
    host, port = s.server.url.removeprefix("http://").rsplit(":", 1)
    for path in ("/app/../_wk/peer/clock?at=9999999999999", "/app/%2E%2E/_wk/peer/clock?at=1",
                 "/app/x/../../_wk/peer/call", "/app/web/../../_wk/peer/actors/app"):
        for _ in range(4):  # whichever process takes it, the owner or the other
            with socket.create_connection((host, int(port)), timeout=30) as c:
                c.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nhost: x\r\n"
                          b"content-length: 1\r\nconnection: close\r\n\r\n\xa0")
                answer = b""
                while chunk := c.recv(65536):
                    answer += chunk
            assert b"application/cbor" not in answer.split(b"\r\n\r\n")[0], (path, answer)
    assert s.now() == before  # no peer's clock moved


def test_calls_cross_processes_and_reentry_through_them_is_refused(
        make_server: MakeServer) -> None:
    server = make_server(extra=TWO)  # the probe; "a" is process 0's, "p2" process 1's
    assert [Partition(0, 2).owner(i) for i in ("a", "p2")] == [0, 1]
    assert chain(server, "a", [("probe", "p2"), ("inner", "c")])["self"] == ["inner", "c"]
    body = chain(server, "a", [("probe", "p2"), ("probe", "a")])
    assert "re-entrant" in body["error"] and body["at"] == ["probe", "p2"]
    status, body = server.actor("probe", "a", "POST", "/call",
                                {"cls": "probe", "id": "p2", "path": "/trap"})
    assert status == 200 and body["error"].startswith("callee-trapped:")


def test_what_is_passed_to_the_wrong_process_is_refused_there(
        make_server: MakeServer) -> None:
    """Who serves an actor is asked once, where a request or call comes in: a request
    or an actor's call passed to a process that does not serve its actor is refused by
    that process, never passed on again."""
    server = make_server(extra=TWO)  # "p2" is process 1's
    assert Partition(0, 2).owner("p2") == 1
    call = cbor2.dumps({"cls": "probe", "id": "p2", "method": "GET", "path": "/echo",
                        "query": "", "headers": [], "body": b"", "sender": ["probe", "a"],
                        "chain": [["probe", "a"]], "timeout_s": 10.0, "trace": {}})
    status, answer = _on_socket(server, 0, "POST", "/_wk/peer/call", call)
    assert status == 200 and cbor2.loads(answer) == {
        "error": "NotServedHere", "message": "probe/p2 is served by process 1, not this one"}
    status, answer = _on_socket(server, 0, "GET", "/probe/p2/echo")
    assert (status, answer) == (500, b"probe/p2 was passed to process 0, which does not "
                                     b"serve it\n")


def _on_socket(server: Server, process: int, method: str, target: str, body: bytes = b""
               ) -> tuple[int, bytes]:
    """One request on a process's own Unix socket, as another process sends it."""
    path = Partition(process, 2).socket_of(server.data, process)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(f"{method} {target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n"
                     f"content-type: application/cbor\r\ncontent-length: {len(body)}"
                     "\r\n\r\n".encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, answer = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), answer


def test_a_held_answer_passed_on_comes_back_after_the_owners_next_event(
        make_server: MakeServer) -> None:
    """One kept connection, so one process takes every request on it (its health says
    which); the held request goes to an actor of the other one, and is passed on."""
    server = make_server(extra=TWO)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("GET", "/_wk/health")
    accepted_by = json.loads(conn.getresponse().read())["process"]
    actor_id = "a" if accepted_by == 1 else "p2"  # process 0's, or process 1's
    assert Partition(0, 2).owner(actor_id) != accepted_by
    now = server.advance(0)
    assert server.actor("probe", actor_id, "POST", "/alarm/set",
                        query=f"at={now + 60_000}")[0] == 200
    answer: dict[str, object] = {}

    def held_request() -> None:
        conn.request("POST", f"/probe/{actor_id}/hold?ms=30000&state=s1", b"")
        resp = conn.getresponse()
        answer.update(status=resp.status, headers=dict(resp.getheaders()),
                      body=json.loads(resp.read()))

    thread = threading.Thread(target=held_request, daemon=True)
    thread.start()
    wait_until(lambda: _held_in(server, Partition(0, 2).owner(actor_id)) == 1,
               what="the answer is held by the actor's process")
    assert not answer
    server.advance(60_000)  # the alarm's event, in the owner: the request comes again
    thread.join(60)
    assert answer["status"] == 200
    assert answer["body"] == {"alarms": 1, "hold_state": "s1", "sender": "public"}
    assert not any(k.lower().startswith("wk-hold") for k in answer["headers"])  # type: ignore[attr-defined]
    conn.close()


def _held_in(server: Server, process: int) -> int:
    """Requests held by one process, asked on its own socket (the TCP port may give
    either)."""
    path = Partition(process, 2).socket_of(server.data, process)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(b"GET /_wk/health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(json.loads(data.split(b"\r\n\r\n", 1)[1])["requests_held"])


def test_bad_input_to_the_supervisor_is_a_clear_error(tmp_path: Path) -> None:
    not_wasm = tmp_path / "x.wasm"
    not_wasm.write_bytes(b"not a component")
    base = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0", "--data",
            str(tmp_path / "data"), "--cache-dir", str(COMPILED)]
    for extra, code, says in (
            (["--actor", f"x={not_wasm}", "--processes", "2"], 1, "is not a component"),
            (["--actor", f"x={tmp_path / 'none.wasm'}", "--processes", "2"], 1,
             "no component at"),
            (["--actor", f"x={not_wasm}", "--processes", "0"], 2, "--processes takes 1 to")):
        done = subprocess.run(base + extra, capture_output=True, text=True, timeout=120,
                              cwd=REPO)
        assert done.returncode == code and says in done.stderr, (extra, done.stderr[-2000:])
        assert "Traceback" not in done.stderr


def test_expect_100_continue_is_answered_once_and_passed_on(make_server: MakeServer) -> None:
    """curl sends `Expect: 100-continue` with bodies over 1 KB. The first process answers
    it; the request passed on must not carry it (the other would answer it again)."""
    server = make_server(extra=TWO)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as c:
        c.sendall(b"GET /_wk/health HTTP/1.1\r\nhost: x\r\n\r\n")
        head, _, body = _read_answer(c)
        other = "a" if json.loads(body)["process"] == 1 else "p2"  # the other's actor
        c.sendall(f"POST /probe/{other}/now HTTP/1.1\r\nhost: x\r\n"
                  "expect: 100-continue\r\ncontent-length: 2\r\n\r\n".encode())
        assert c.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        c.sendall(b"{}")
        head, _, body = _read_answer(c)
        assert head.startswith(b"HTTP/1.1 200") and "now" in json.loads(body), (head, body)


def _read_answer(c: socket.socket) -> tuple[bytes, bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        data += c.recv(65536)
    head, sep, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += c.recv(65536)
    return head, sep, body


def test_every_process_starts_its_fake_clock_where_it_was_asked_to(
        make_server: MakeServer) -> None:
    start = 1_796_169_934_436
    server = make_server(extra=[*TWO, "--fake-clock-start", str(start)])
    # o1 and o2 are served by the two processes (test_the_ids_used_here_...).
    for actor in ("o1", "o2"):
        status, _, body = server.request("GET", f"/probe/{actor}/now")
        assert status == 200 and json.loads(body)["now"] == start, body
