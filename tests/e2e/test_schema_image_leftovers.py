"""A host killed (kill -9) while it makes a class's schema image leaves that image's work
files beside the new actor's database; the next start removes them, and nothing else:
the other actors' databases and what they hold, an actor whose id looks like such a
file, and a file of another name stay. The kill is a real SIGKILL at the crash point
`schema-image` (host/testing/crashpoints.py), on a real `wkhost serve`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from wkhost.storage import paths

from .server import Server

pytestmark = pytest.mark.e2e

# The host's own names for them (storage/images.py), matched here on their own.
WORK_FILE = re.compile(r"wk-schema-[0-9]+\.[0-9]+\.image.*")
LOOKALIKE = "wk-schema-1.2.image"  # an actor id: its file is encoded, and ends in .db


@pytest.fixture(scope="session")
def hostile_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("hostile_data")


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        if s.proc is not None and s.proc.poll() is None:
            s.stop()


def sql(server: Server, actor_id: str, text: str) -> object:
    status, doc = server.actor("hd", actor_id, "POST", "/sql", {"sql": text})
    assert status == 200 and "error" not in doc, doc
    return doc["rows"]


def files_under(data: Path) -> set[str]:
    return {str(p.relative_to(data)) for p in (data / "actors").rglob("*") if p.is_file()}


def test_a_kill_while_learning_leaves_files_the_next_start_removes_and_nothing_else(
        hostile_wasm: Path, tmp_path: Path, servers: list[Server]) -> None:
    data = tmp_path / "data"
    crashing = Server(data, {"hd": hostile_wasm},
                      env={**os.environ, "WKHOST_CRASH_AT": "schema-image"})
    servers.append(crashing)
    crashing.start()
    for actor_id in ("keep", LOOKALIKE):  # actors with data, made before the kill
        sql(crashing, actor_id, "CREATE TABLE kept (v); INSERT INTO kept VALUES ('mine')")
    with pytest.raises(OSError):  # the connection drops: the host killed itself
        crashing.actor("hd", "tables-40", "GET", "/now", timeout=120)
    assert crashing.proc is not None and crashing.proc.wait(30) == -9
    crashing.stop()  # its pipes closed
    assert any("crash point schema-image reached" in line for line in crashing.log)

    learning = paths.db_path(data, "hd", "tables-40")
    left = {f for f in files_under(data) if WORK_FILE.fullmatch(Path(f).name)}
    assert any(f.endswith(".image") for f in left), left
    assert {(data / f).parent for f in left} == {learning.parent}
    other_name = learning.parent / "wk-schema-notes.txt"  # not a name the host gives
    other_name.write_text("not the host's\n")
    before = files_under(data)

    again = Server(data, {"hd": hostile_wasm})
    servers.append(again)
    again.start()
    after = files_under(data)
    assert not {f for f in after if WORK_FILE.fullmatch(Path(f).name)}
    # Everything else is where it was: the half-made actor's database aside (the host
    # died in its on-init, so it was never created, and the restart removes it).
    half_made = {f for f in before if f.startswith(str(learning.relative_to(data)))}
    kept = {f for f in before - left - half_made if not f.endswith(("-wal", "-shm"))}
    assert kept <= after
    assert other_name.read_text() == "not the host's\n"
    for actor_id in ("keep", LOOKALIKE):
        assert sql(again, actor_id, "SELECT v FROM kept") == [["mine"]]

    # The class learns its image now, and leaves no file either.
    tables = "SELECT count(*) FROM sqlite_master WHERE name GLOB 't[0-9]*'"
    assert sql(again, "tables-40", tables) == [[40]]
    assert not {f for f in files_under(data) if WORK_FILE.fullmatch(Path(f).name)}
