"""The `wkhost` CLI's contract, through the real command against a real `wkhost serve`:
exit codes (docs/cli.md), a reader that goes away (`| head`), what `call` shows on a
terminal, a start whose input is ignored, `--wait`'s timeout, `--version` and --help."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pty
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cbor2
import pytest
from wkhost.cli.options import EVERY, contract_markdown, exit_status_epilog

from . import workflow_support
from .conftest import MakeServer
from .server import REPO, Server
from .workflow_support import HOUR, INTERNAL, ORDER, Shop, in_state

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def served(make_server: MakeServer, probe_wasm: Path,
           workflow_wasm: dict[str, Path]) -> Server:
    """probe (public), and the example's orders and ledger (internal), on the fake clock."""
    return make_server(actors={"probe": probe_wasm, "orders": workflow_wasm["orders"],
                               "ledger": workflow_wasm["ledger"]}, access=INTERNAL)


def wkhost(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    kw.setdefault("capture_output", True)
    return subprocess.run([sys.executable, "-m", "wkhost.cli", *args], text=True,
                          timeout=120, cwd=REPO, **kw)  # type: ignore[call-overload]


def at(server: Server) -> list[str]:
    return ["--server", server.url, "--data", str(server.data)]


def on_a_terminal(*args: str) -> tuple[int, bytes, str]:
    """Run wkhost with its stdout on a pseudo-terminal: (exit code, what the terminal
    got, stderr)."""
    master, slave = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "wkhost.cli", *args], stdout=slave,
                          stderr=subprocess.PIPE, cwd=REPO) as proc:
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last holder of the terminal closed it
                break
            if not chunk:
                break
            shown += chunk
        os.close(master)
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        return proc.wait(60), shown.replace(b"\r\n", b"\n"), err


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def expect(done: subprocess.CompletedProcess[str], code: int, message: str = "") -> None:
    assert done.returncode == code, (done.args[3:], done.returncode, done.stdout, done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


# -- item 8: exit codes -----------------------------------------------------------------
def test_call_and_actors_exit_by_the_contract(served: Server, tmp_path: Path) -> None:
    s = at(served)
    expect(wkhost("call", "probe/p1", "/now", *s), 0)
    expect(wkhost("call", "probe/p1", "/nosuch", *s), 1)
    expect(wkhost("call", "Probe/p1", "/now", *s), 2, "bad class name 'Probe'")
    expect(wkhost("call", "probe", "/now", *s), 2, "the target is CLASS/ID")
    expect(wkhost("call", "probe/p1", "/echo", "-d", f"@{tmp_path}/none", *s), 2,
           f"cannot read {tmp_path}/none")
    expect(wkhost("call", "probe/p1", "/now", "-o", f"{tmp_path}/no/dir/x", *s), 2, "-o")
    expect(wkhost("call", "probe/p1", "--nosuch-flag", *s), 2)
    expect(wkhost("call", "probe/p1", "/now", "--server", served.url, "--data",
                  str(tmp_path)), 2, "no admin token")
    unreachable = f"http://127.0.0.1:{free_port()}"
    expect(wkhost("call", "probe/p1", "/now", "--server", unreachable, "--data",
                  str(served.data)), 3, f"cannot reach {unreachable}")

    expect(wkhost("actors", "probe", *s), 0)
    expect(wkhost("actors", "Probe", *s), 2, "bad class name")
    expect(wkhost("actors", "nosuch", *s), 1, "no actor class named 'nosuch'")
    expect(wkhost("actors", "probe", "--limit", "0", *s), 2, "--limit takes 1 to 10000")
    expect(wkhost("actors", "probe", "--server", unreachable, "--data", str(served.data)),
           3, "cannot reach")


def test_build_exits_by_the_contract(tmp_path: Path) -> None:
    expect(wkhost("build", str(tmp_path / "none.py"), "-o", str(tmp_path / "x.wasm")), 2,
           f"cannot read {tmp_path}/none.py")
    expect(wkhost("build", str(tmp_path / "app.txt"), "-o", str(tmp_path / "x.wasm")), 2,
           "must be a .py file")
    (tmp_path / "bad.py").write_text("def broken(:\n")
    expect(wkhost("build", str(tmp_path / "bad.py"), "-o", str(tmp_path / "x.wasm"),
                  "--cache-dir", str(tmp_path / "cache")), 1, "error")


def test_workflow_commands_exit_by_the_contract(served: Server) -> None:
    """0 running/waiting/completed, 10 failed, 11 cancelled, 1 refused, 2 usage, 3
    unreachable; a cancel of an instance that had already failed cancels nothing (1)."""
    s = at(served)
    shop = Shop(served)
    slow = json.dumps({**ORDER, "cool_off_ms": HOUR})
    expect(wkhost("workflow", "start", "orders", "w1", "--input", slow, *s), 0)
    expect(wkhost("workflow", "status", "orders", "w1", *s), 0)
    expect(wkhost("workflow", "cancel", "orders", "w1", *s), 0)
    expect(wkhost("workflow", "status", "orders", "w1", *s), 11)
    expect(wkhost("workflow", "status", "orders", "w1", "--json", *s), 11)
    expect(wkhost("workflow", "cancel", "orders", "w1", *s), 0)  # still cancelled
    expect(wkhost("workflow", "send-event", "orders", "w1", "approved", *s), 1, "finished")

    no_approval = json.dumps({**ORDER, "cool_off_ms": 0, "approve_within_ms": 0})
    failed = wkhost("workflow", "start", "orders", "f1", "--input", no_approval, "--wait",
                    "--timeout", "60", *s)
    expect(failed, 10)
    assert failed.stdout.startswith("orders/f1: failed"), failed.stdout
    expect(wkhost("workflow", "status", "orders", "f1", *s), 10)
    expect(wkhost("workflow", "cancel", "orders", "f1", *s), 1,
           "had already finished (failed): not cancelled")
    assert shop.status("f1")["state"] == "failed"

    expect(wkhost("workflow", "status", "orders", "ghost", *s), 1, "unknown")
    expect(wkhost("workflow", "status", "Orders", "w1", *s), 2, "bad class name 'Orders'")
    expect(wkhost("workflow", "status", "orders", "x" * 300, *s), 2, "at most 256 UTF-8 bytes")
    expect(wkhost("workflow", "start", "orders", "w9", "--input", "{nope", *s), 2, "not JSON")
    expect(wkhost("workflow", "start", "orders", "w9", "--input", "@/no/such/file", *s), 2,
           "cannot read /no/such/file")
    expect(wkhost("workflow", "status", "orders", "w1", "--wait", "--timeout", "0", *s), 2,
           "--timeout")
    expect(wkhost("workflow", "list", "orders", "--status", "odd", *s), 2)
    expect(wkhost("workflow", "status", "orders", "w1", "--server",
                  f"http://127.0.0.1:{free_port()}", "--data", str(served.data)), 3)
    assert "w9" not in shop.actor_ids()  # nothing was sent for a usage error


# -- item 7: --wait honours --timeout ---------------------------------------------------
def test_a_wait_that_times_out_exits_4_with_the_status_of_that_moment(served: Server) -> None:
    """The fake clock never reaches the hour-long cool-off: the instance stays waiting,
    so the wait must end by its --timeout."""
    s = at(served)
    slow = json.dumps({**ORDER, "cool_off_ms": HOUR})
    started = wkhost("workflow", "start", "orders", "t1", "--input", slow, "--wait",
                     "--timeout", "1", *s)
    expect(started, 4, "orders/t1: timed out: not finished after --timeout 1 s "
                       "(it is waiting)")
    assert started.stdout.startswith("orders/t1: waiting, 2 positions"), started.stdout
    followed = wkhost("workflow", "status", "orders", "t1", "--wait", "--timeout", "0.5",
                      "--json", *s)
    expect(followed, 4, "timed out: not finished after --timeout 0.5 s")
    assert json.loads(followed.stdout)["state"] == "waiting"


# -- item 2: a start of an existing id --------------------------------------------------
def test_a_start_of_an_existing_id_says_when_its_input_was_ignored(served: Server) -> None:
    s, shop = at(served), Shop(served)
    first = {**ORDER, "cool_off_ms": HOUR}
    expect(wkhost("workflow", "start", "orders", "c1", "--input", json.dumps(first), *s), 0)
    state = shop.wait_for("c1", in_state("waiting"))
    again = wkhost("workflow", "start", "orders", "c1", "--input",
                   json.dumps(dict(reversed(first.items()))), *s)  # the same, keys reordered
    expect(again, 0)
    assert again.stderr == "" and again.stdout.startswith("orders/c1: waiting, 2 positions")

    other = wkhost("workflow", "start", "orders", "c1", "--input",
                   json.dumps({**first, "qty": 9}), *s)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(state["created_at"] / 1000))
    expect(other, 0, f"orders/c1: instance already exists (created at {when}.")
    assert "its input differs from the one given, which was ignored" in other.stderr
    assert other.stdout.startswith("orders/c1: waiting, 2 positions"), other.stdout
    as_json = json.loads(wkhost("workflow", "start", "orders", "c1", "--input", "{}", "--json",
                                *s).stdout)
    assert (as_json["created"], as_json["input_differs"]) == (False, True)
    assert as_json["created_at"] == state["created_at"]
    assert shop.status("c1")["run_id"] == state["run_id"]  # nothing about it changed

    # the host client says the same
    made = shop.admin.start("orders", "c2", first)
    assert (made.created, made.input_differs) == (True, False)
    same, differs = shop.admin.start("orders", "c2", first), shop.admin.start("orders", "c2")
    assert (same.created, same.input_differs) == (False, False)
    assert (differs.created, differs.input_differs) == (False, True)
    assert same.created_at == differs.created_at == made.created_at is not None


# -- item 5: a reader that goes away ----------------------------------------------------
def test_every_printing_command_exits_quietly_when_its_reader_goes(
        served: Server, probe_wasm: Path, tmp_path: Path) -> None:
    """stdout (or, for build's progress, stderr) is a pipe whose reader has gone: no
    traceback, exit 141 (a traceback would exit 1)."""
    s, order = at(served), {**ORDER, "cool_off_ms": HOUR}
    for i in range(3):
        served.actor("probe", f"a{i}", "GET", "/now")
    build = ["build", str(REPO / "tests/guests/probe.py"), "-o", str(tmp_path / "p.wasm"),
             "--cache-dir", str(probe_wasm.parent)]  # cached: its progress is one line
    for unbuffered in (False, True):  # the write fails in a print, or in the last flush
        w = f"w{int(unbuffered)}"  # an instance for each round: the last one cancels it
        Shop(served).admin.start("orders", w, order)
        for args in [
            ["call", "probe/p1", "/big", "--raw", *s], ["call", "probe/p1", "/now", *s],
            ["actors", "probe", *s], ["workflow", "status", "orders", w, *s],
            ["workflow", "start", "orders", w, "--input", json.dumps(order), *s],
            ["workflow", "steps", "orders", w, *s], ["workflow", "list", "orders", *s],
            ["workflow", "send-event", "orders", w, "approved", *s],
            ["workflow", "cancel", "orders", w, *s], ["--version"],
        ]:
            code, err = _with_a_closed_pipe(args, "stdout", unbuffered)
            assert (code, err) == (141, ""), (args, unbuffered, code, err)
        assert _with_a_closed_pipe(build, "stderr", unbuffered)[0] == 141
    # argparse writes --help itself, and ignores a failed write: unbuffered, that is a
    # quiet exit 0; buffered, main's flush sees it
    for args in (["--help"], ["workflow", "start", "--help"]):
        assert _with_a_closed_pipe(args, "stdout", False) == (141, ""), args


def _with_a_closed_pipe(args: list[str], which: str, unbuffered: bool) -> tuple[int, str]:
    """Run wkhost with `which` (stdout or stderr) on a pipe that nobody reads: (exit
    code, the other stream's text)."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, which: write}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    try:
        done = subprocess.run([sys.executable, "-m", "wkhost.cli", *args], cwd=REPO,
                              text=True, timeout=120, env=env | ({"PYTHONUNBUFFERED": "1"}
                                                                 if unbuffered else {}),
                              **streams)  # type: ignore[call-overload]
    finally:
        os.close(write)
    other = done.stderr if which == "stdout" else done.stdout
    return done.returncode, other or ""


# -- item 6: what `call` shows on a terminal --------------------------------------------
def test_call_shows_on_a_terminal_what_it_can_decode_and_describes_the_rest(
        served: Server, tmp_path: Path) -> None:
    s = at(served)
    code, shown, _ = on_a_terminal("call", "probe/p1", "/big", *s)
    assert (code, shown) == (0, b"<1024 bytes of application/octet-stream: not shown on a "
                                b"terminal; --raw prints them, -o FILE saves them>\n")
    big = bytes(range(256)) * 4
    assert on_a_terminal("call", "probe/p1", "/big", "--raw", *s)[1] == big
    piped = subprocess.run([sys.executable, "-m", "wkhost.cli", "call", "probe/p1", "/big",
                            *s], capture_output=True, timeout=60, cwd=REPO)
    assert piped.returncode == 0 and piped.stdout == big  # not a terminal: the bytes
    code, shown, _ = on_a_terminal("call", "probe/p1", "/big", "-i", "-o",
                                   str(tmp_path / "big.bin"), *s)
    assert (code, shown, (tmp_path / "big.bin").read_bytes()) == (0, b"HTTP 200\n", big)

    code, shown, _ = on_a_terminal("call", "probe/p1", "/now", *s)
    assert code == 0 and set(json.loads(shown)) == {"now"}  # JSON, as it came

    # the workflow protocol's CBOR, decoded: a 404 answer (exit 1), then a start
    code, shown, _ = on_a_terminal("call", "orders/ghost", "/wk-workflow/v1/status",
                                   "-X", "POST", *s)
    assert code == 1 and json.loads(shown)["error"] == "unknown", shown
    (tmp_path / "start.cbor").write_bytes(cbor2.dumps({"input": {**ORDER, "cool_off_ms": HOUR}}))
    code, shown, _ = on_a_terminal("call", "orders/k1", "/wk-workflow/v1/start",
                                   "-d", f"@{tmp_path}/start.cbor", *s)
    started = json.loads(shown)
    assert code == 0 and (started["state"], started["created"]) == ("running", True), shown
    assert shown.startswith(b'{\n  "'), shown  # indented, one key a line


# -- item 9 and the contract in --help and docs -----------------------------------------
def test_version_names_wkhost_wasmtime_and_componentize_py() -> None:
    done = wkhost("--version")
    v = importlib.metadata.version
    assert done.returncode == 0
    assert done.stdout.startswith(f"wkhost {v('wkhost')} (wasmtime {v('wasmtime')}, "
                                  f"componentize-py {v('componentize-py')}, Python "), done.stdout


def test_every_command_helps_with_its_exit_codes_and_the_docs_hold_the_table() -> None:
    for command in sorted(EVERY):
        done = wkhost(*command.split(), "--help")
        assert done.returncode == 0, (command, done.stderr)
        assert exit_status_epilog(command) in done.stdout, (command, done.stdout)
    for command in ("call", "actors"):
        assert "examples:\n  wkhost " + command in wkhost(command, "--help").stdout
    actors_help = " ".join(wkhost("actors", "--help").stdout.split())
    assert "--limit N list at most N ids, 1 to 10000 (default 1000)" in actors_help
    assert contract_markdown() in (REPO / "docs" / "cli.md").read_text()
