"""Updates through a real server (examples/workflows/cart/app.py): one request that
answers the handler's result (the answer held until the update ends), the validator's
refusal recording nothing (its event marked read-only, the accepted update's COMMIT
after the mark), the CLI, and
kill -9 at each statement of an update's way: the caller asks again with the update's
id and gets the right answer, and the cart holds the item once."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from . import reliability_support
from .reliability_support import HostDown, Launch

launch = reliability_support.launch  # the fixture, by name
CLS = "carts"


@pytest.fixture(scope="module")
def wasm(build_guest: Callable[[str], Path]) -> dict[str, Path]:
    return {CLS: build_guest("examples/workflows/cart/app.py")}


def started(launch: Launch, wasm: dict[str, Path], data: Path, **kw: object):  # type: ignore[no-untyped-def]
    host = launch(wasm, data, access={}, **kw)
    code, st = host.wk(CLS, "c1", "start", {"input": None, "wait_ms": 5_000})
    assert code == 200 and st["state"] == "waiting", st
    return host


def test_one_request_answers_the_handlers_result(launch: Launch, wasm: dict[str, Path],
                                                 tmp_path: Path) -> None:
    host = started(launch, wasm, tmp_path / "data")
    code, ans = host.wk(CLS, "c1", "update", {"name": "add", "arg": "book", "id": "u1",
                                              "wait_ms": 20_000})
    assert code == 200, ans
    u = ans["update"]
    assert (u["state"], u["result"], u["id"]) == ("completed", {"items": 1, "total": 400}, "u1")
    code, again = host.wk(CLS, "c1", "update", {"name": "add", "arg": "book", "id": "u1"})
    assert again["update"] == u  # idempotent by id: nothing recorded again
    code, q = host.wk(CLS, "c1", "query", {"name": "items"})
    assert q["result"] == [["book", 400]]


def test_a_validator_refuses_and_records_nothing(
        launch: Launch, wasm: dict[str, Path], tmp_path: Path) -> None:
    host = started(launch, wasm, tmp_path / "data")
    _, before = host.wk(CLS, "c1", "status")
    code, ans = host.wk(CLS, "c1", "update", {"name": "add", "arg": 7})
    assert (code, ans["error"]) == (422, "update-rejected"), ans
    assert "a sku is non-empty text" in ans["message"]
    _, after = host.wk(CLS, "c1", "status")
    assert after == before  # nothing recorded: no position, no update waiting
    # the read-only mark of the validator's event let the accepted update's COMMIT by
    code, ans = host.wk(CLS, "c1", "update", {"name": "add", "arg": "pen", "wait_ms": 20_000})
    assert ans["update"]["result"] == {"items": 1, "total": 300}, ans


def test_an_update_outliving_the_hold_answers_its_id_to_ask_again(
        launch: Launch, wasm: dict[str, Path], tmp_path: Path) -> None:
    host = started(launch, wasm, tmp_path / "data")
    code, ans = host.wk(CLS, "c1", "update", {"name": "wrap", "arg": 60_000, "id": "s1",
                                              "wait_ms": 300})
    assert (code, ans["update"]["state"]) == (200, "taken"), ans
    host.clock(60_000)
    code, ans = host.wk(CLS, "c1", "update", {"id": "s1", "wait_ms": 20_000})
    assert (ans["update"]["state"], ans["update"].get("result")) == ("completed", "wrapped"), ans


def test_the_cli_sends_an_update_and_asks_again(launch: Launch, wasm: dict[str, Path],
                                                tmp_path: Path) -> None:
    host = started(launch, wasm, tmp_path / "data")
    base = [sys.executable, "-m", "wkhost.cli", "workflow", "update", CLS, "c1"]
    server = ["--server", host.url, "--data", str(host.data)]

    def wk(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args, *server], capture_output=True, text=True,
                              timeout=60)

    out = wk("add", "--arg", '"mug"')
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"items": 1, "total": 300}
    out = wk("add", "--arg", "5")
    assert out.returncode == 1 and "a sku is non-empty text" in out.stderr, out
    out = wk("wrap", "--arg", "60000", "--update-id", "s9", "--timeout", "0.3")
    assert out.returncode == 4 and "--update-id s9" in out.stderr, out
    host.clock(60_000)
    out = wk("--update-id", "s9")
    assert (out.returncode, json.loads(out.stdout)) == (0, "wrapped"), out
    start = [sys.executable, "-m", "wkhost.cli", "workflow", "start", CLS, "c2", "--update",
             "add", "--arg", '"cup"', "--wait", *server]
    out = subprocess.run(start, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out  # the cart waits on: the update's end ends the wait
    assert "update 'add' (" in out.stdout and '): completed: {"items": 1, "total": 300}' \
        in out.stdout, out.stdout


# (crash point, whether the update was accepted when it struck)
# (the others lie between two of these with nothing of the update's own in between: the
# acceptance's inbox row before its COMMIT, the handler's attempt before its result)
POINTS = [("sql-after:wk:update-begin", False), ("sql-before:wk:update-commit", False),
          ("sql-after:wk:update-commit", True), ("sql-after:wk:update-taken", True),
          ("sql-after:wk:result", True), ("sql-after:wk:update-done", True)]


@pytest.mark.parametrize("point, accepted", POINTS, ids=[p for p, _ in POINTS])
def test_a_kill_on_an_updates_way_loses_nothing(launch: Launch, wasm: dict[str, Path],
                                                tmp_path: Path, point: str,
                                                accepted: bool) -> None:
    data = tmp_path / "data"
    host = launch(wasm, data, access={})
    code, st = host.wk(CLS, "c1", "start", {"input": None, "wait_ms": 5_000})
    assert code == 200 and st["state"] == "waiting", st
    host.close()
    host = launch(wasm, data, crash_at=point, access={})
    update = {"name": "add", "arg": "lamp", "id": "k1", "wait_ms": 20_000}
    with pytest.raises(HostDown):
        host.wk(CLS, "c1", "update", update)
    assert host.crashed_at(point), host.log[-20:]

    host = launch(wasm, data, access={})
    host.clock(60_000)  # the watchdog's backoff: a run cut in the update's way goes on
    code, ans = host.wk(CLS, "c1", "update", {"id": "k1", "wait_ms": 20_000})
    if not accepted:  # nothing was recorded: the client's retry sends it whole
        assert (code, ans["error"]) == (404, "unknown-update"), ans
        code, ans = host.wk(CLS, "c1", "update", update)
    assert code == 200 and ans["update"]["state"] == "completed", ans
    assert ans["update"]["result"] == {"items": 1, "total": 400}
    code, q = host.wk(CLS, "c1", "query", {"name": "items"})
    assert q["result"] == [["lamp", 400]]
    code, st = host.wk(CLS, "c1", "event", {"name": "checkout", "payload": "ann"})
    code, st = host.wk(CLS, "c1", "status", {"wait_ms": 20_000})
    assert st["output"] == {"items": [["lamp", 400]], "paid_by": "ann"}, st


def test_update_with_start_answers_once_the_update_ends(launch: Launch,
                                                        wasm: dict[str, Path],
                                                        tmp_path: Path) -> None:
    host = launch(wasm, tmp_path / "data", access={})
    code, ans = host.wk(CLS, "c7", "start", {"update": {"name": "add", "arg": "kite", "id": "w1"},
                                             "wait_ms": 20_000})
    assert code == 200 and ans["created"] is True, ans
    assert (ans["update"]["state"], ans["update"]["result"]) == (
        "completed", {"items": 1, "total": 400}), ans


# (crash point, whether the start's transaction had committed when it struck)
WITH_START = [("sql-after:wk:create", False), ("sql-before:wk:update-commit", False),
              ("sql-after:wk:update-commit", True)]


@pytest.mark.parametrize("point, committed", WITH_START, ids=[p for p, _ in WITH_START])
def test_a_kill_inside_update_with_start(launch: Launch, wasm: dict[str, Path],
                                         tmp_path: Path, point: str, committed: bool) -> None:
    data = tmp_path / "data"
    host = launch(wasm, data, crash_at=point, access={})
    start = {"update": {"name": "add", "arg": "kite", "id": "w1"}, "wait_ms": 20_000}
    with pytest.raises(HostDown):
        host.wk(CLS, "c7", "start", start)
    assert host.crashed_at(point), host.log[-20:]

    host = launch(wasm, data, access={})
    code, st = host.wk(CLS, "c7", "status")
    assert (code == 200) == committed, st  # before the COMMIT: no instance at all
    code, ans = host.wk(CLS, "c7", "start", start)  # the client's retry
    assert code == 200 and ans["created"] is not committed, ans
    assert (ans["update"]["id"], ans["update"]["state"]) == ("w1", "completed"), ans
    code, q = host.wk(CLS, "c7", "query", {"name": "items"})
    assert q["result"] == [["kite", 400]]
