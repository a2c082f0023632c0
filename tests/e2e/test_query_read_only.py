"""A workflow's query handlers only read (issue 36, item 9): through a real server, each
change a handler tries (tests/guests/wf_readonly.py) is refused with an error that names
the rule, and none of it is there after a kill -9 and a restart. The same handlers'
reads work, and the instance's next run, after the queries, writes as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cbor2
import pytest

from .conftest import MakeServer
from .server import Server

pytestmark = pytest.mark.e2e

TIMEOUT = 30.0
CLS, OID = "wf_readonly", "w1"
CHANGES = ("exec", "exec-durable", "write", "cte", "fetch", "call", "alarm-set",
           "alarm-clear", "delete-self", "publish")


@pytest.fixture(scope="module")
def readonly_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("wf_readonly")


def wk(server: Server, route: str, msg: dict[str, Any] | None = None) -> tuple[int, Any]:
    """A wk-workflow/v1 request to the instance, as the operator."""
    status, _, data = server.request(
        "POST", f"/{CLS}/{quote(OID, safe='')}/wk-workflow/v1/{route}",
        cbor2.dumps(msg or {}), {"Content-Type": "application/cbor"}, operator=True)
    return status, cbor2.loads(data)


def wait_for(server: Server, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + TIMEOUT
    s: Any = None
    while time.monotonic() < deadline:
        code, s = wk(server, "status")
        if code == 200 and pred(s):
            return dict(s)
        time.sleep(0.05)
    raise AssertionError(f"not reached in {TIMEOUT} s: {s}")


def query(server: Server, name: str) -> tuple[int, Any]:
    return wk(server, "query", {"name": name})


def test_a_query_handler_changes_nothing_and_its_reads_work(
        make_server: MakeServer, readonly_wasm: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = make_server({CLS: readonly_wasm}, access={CLS: "internal"}, data=data)
    assert wk(server, "start", {"input": None})[0] == 200
    s = wait_for(server, lambda s: s["waiting_for"] == ["next"])
    assert query(server, "read") == (200, {"result": {"notes": ["from-run"], "alarm": True},
                                           "position": 1})

    for name in CHANGES:
        code, body = query(server, name)
        assert code == 422 and body["error"] == "query-failed", (name, code, body)
        assert f"ReadOnlyError: read-only: query {name!r} may only read" in body["message"], \
            (name, body)
    # Past the SDK's modules, the host refuses it itself.
    code, body = query(server, "raw")
    assert code == 200 and body["result"].startswith("ReadOnlyError: read-only: "), body
    assert "(lifecycle.read-only)" in body["result"]
    assert query(server, "read")[1]["result"] == {"notes": ["from-run"], "alarm": True}
    assert wait_for(server, lambda s: True)["positions"] == s["positions"]

    # Once a query is answered, the guard is lifted: the same instance's next run writes.
    assert wk(server, "event", {"name": "next"})[0] == 200
    done = wait_for(server, lambda s: s["state"] == "completed")
    assert done["output"] == ["from-run", "after-query"]

    server.kill9()
    server = make_server({CLS: readonly_wasm}, access={CLS: "internal"}, data=data)
    assert query(server, "read")[1]["result"]["notes"] == ["from-run", "after-query"]
