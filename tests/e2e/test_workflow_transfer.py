"""A live instance exported from one real `wkhost serve` and imported on another, through
`wkhost workflow export` and `import`: a sleeping order goes on there to its end with the
right output; its tables, pending events and alarm come with it; an id that has an
instance is refused, and so is a file that is not an export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from wkhost.testkit.histories import HistoryMismatch, check_history

from . import workflow_support
from .conftest import MakeServer
from .server import REPO, Server
from .workflow_support import HOUR, INTERNAL, Shop, Status, finished, waiting_for

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name


def sleeping(s: Status) -> bool:  # an instance in a sleep waits, for no event
    return s.get("state") == "waiting" and not s.get("waiting_for")


@pytest.fixture
def two(make_server: MakeServer, workflow_wasm: dict[str, Path], tmp_path: Path
        ) -> tuple[Shop, Shop]:
    actors = {n: workflow_wasm[n] for n in ("orders", "ledger", "app")}
    return (Shop(make_server(actors=actors, access=INTERNAL, data=tmp_path / "a")),
            Shop(make_server(actors=actors, access=INTERNAL, data=tmp_path / "b")))


def wkhost(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wkhost.cli", "workflow", *args,
                           "--server", server.url, "--data", str(server.data)],
                          capture_output=True, text=True, timeout=120)


def export(shop: Shop, oid: str, tmp_path: Path, *more: str) -> dict[str, Any]:
    out = tmp_path / f"{oid}.json"
    proc = wkhost(shop.server, "export", "orders", oid, "-o", str(out), *more)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_a_sleeping_order_exported_goes_on_to_its_end_on_another_server(
        two: tuple[Shop, Shop], tmp_path: Path) -> None:
    a, b = two
    a.app_start("o1", cool_off_ms=HOUR, trap_in_pack=True)
    a.drive("o1", sleeping)
    doc = export(a, "o1", tmp_path)
    assert doc["format"] == "wk-workflow-export/1"
    assert doc["actor"] == {"class": "orders", "id": "o1"}
    assert len(doc["build"]) == 64 and doc["left_out"] == []
    names = [r[2] for r in doc["tables"]["_wk_wf_step"]["rows"]]
    assert names[:3] == ["reserve", "pack", "cool-off"], names
    assert doc["alarm_at"] >= a.now() + HOUR - 1000  # the sleep's end
    assert all(not o["name"].startswith("_wk_host") for o in doc["schema"])

    # The same file is a history the test kit replays (on CPython, with no build).
    orders = REPO / "examples" / "workflows" / "orders"
    assert check_history(orders / "app.py", tmp_path / "o1.json").position == 2  # its sleep
    with pytest.raises(HistoryMismatch, match="position 0 was recorded as step 'reserve'"):
        check_history(orders / "app_reordered.py", tmp_path / "o1.json")

    proc = wkhost(b.server, "import", str(tmp_path / "o1.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "orders/o1: imported: waiting, 3 positions"
    assert "note:" not in proc.stderr  # the same build on both
    # On b, from where it was: b's clock is not a's, so the hour's sleep is b's to pass.
    b.drive("o1", waiting_for("approved"))
    assert b.approve("o1")[0] == 200
    s = b.drive("o1", finished)
    assert s["state"] == "completed", s
    assert s["output"]["reservation"] == "res-o1" and s["output"]["parcel"] == "parcel-o1"
    steps = [(st["name"], st["attempts"]) for st in b.steps("o1")]
    assert steps[:2] == [("reserve", 1), ("pack", 2)]  # recorded on a, not run again on b
    assert ("charge", 1) in steps
    # a still has its own, untouched: an export moves nothing.
    assert sleeping(a.status("o1")) and a.status("o1")["positions"] == 3


def test_an_id_with_an_instance_is_refused_and_another_id_is_taken(
        two: tuple[Shop, Shop], tmp_path: Path) -> None:
    a, b = two
    a.app_start("o2", cool_off_ms=0)
    a.drive("o2", waiting_for("approved"))
    assert a.wk("o2", "event", {"name": "early", "payload": {"n": 1}})[0] == 200
    export(a, "o2", tmp_path, "--leave-out", "_wk_wf_attempt")
    proc = wkhost(a.server, "import", str(tmp_path / "o2.json"))
    assert proc.returncode == 1, proc.stderr
    assert "has an instance already" in proc.stderr
    proc = wkhost(b.server, "import", str(tmp_path / "o2.json"), "--as", "o2-copy")
    assert proc.returncode == 0, proc.stderr
    copy = b.status("o2-copy")
    assert copy["state"] == "waiting" and copy["waiting_for"] == ["approved"]
    assert copy["events_pending"] == 1  # the event sent and not yet taken came along
    assert b.approve("o2-copy")[0] == 200
    out = b.drive("o2-copy", finished)["output"]
    # What was recorded is as a recorded it; what the code reads anew is its new id.
    assert (out["reservation"], out["order"]) == ("res-o2", "o2-copy")


def test_a_file_that_is_not_an_export_is_bad_usage(
        two: tuple[Shop, Shop], tmp_path: Path) -> None:
    _, b = two
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}))
    proc = wkhost(b.server, "import", str(bad))
    assert proc.returncode == 2 and "is not a wk-workflow-export/1 document" in proc.stderr
    proc = wkhost(b.server, "export", "orders", "nobody")
    assert proc.returncode == 1 and "unknown" in proc.stderr, proc.stderr
