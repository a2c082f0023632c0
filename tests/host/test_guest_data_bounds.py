"""Host work over guest data (issue 36): a trim stand-in over astral characters, and the
learning of a class's schema image, run under the event's deadline and lend its run
slot, so that a neighbour actor is served meanwhile; learning past its bounds gives the
class no image, and the actors still work. The guest is tests/guests/hostile_data.py."""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.errors import BudgetExceeded
from wkhost.events import schema_learning
from wkhost.storage import files, functions, images
from wkhost.testing import FakeClock
from wkhost.types import Request, Response, Sender

from .support import COMPILED, START_MS

MakeHost = Callable[..., Host]
COUNT_TABLES = b'{"sql": "SELECT count(*) FROM sqlite_master WHERE name GLOB \'t[0-9]*\'"}'


@pytest.fixture(scope="session")
def hostile_wasm(build_guest: Callable[[str], Path]) -> Path:
    return build_guest("hostile_data")


@pytest.fixture
def make_host(tmp_path: Path, hostile_wasm: Path) -> Iterator[MakeHost]:
    hosts: list[Host] = []

    def make(**settings: Any) -> Host:
        # One run slot: a neighbour is served only if the long work lends it.
        config = HostConfig(data_dir=tmp_path / "data", cache_dir=COMPILED,
                            running_events=1, **settings)
        host = Host(config, FakeClock(START_MS))
        hosts.append(host)
        host.add_class("hd", hostile_wasm)
        host.start()
        return host

    yield make
    for h in hosts:
        h.close()


def send(host: Host, actor_id: str, path: str, query: str = "",
         method: str = "POST", body: bytes = b"") -> Response:
    return host.request(host.actor_ref("hd", actor_id), Request(method, path, query, [], body),
                        Sender.operator())


def served_while(host: Host, started: threading.Event,
                 hostile: Callable[[], Response]) -> tuple[Future[Response], bool]:
    """Start `hostile`; once `started`, ask the warm neighbour: whether it was answered
    while the hostile event was still running."""
    assert send(host, "neighbour", "/now", method="GET").status == 200  # made, warm
    pool = ThreadPoolExecutor(1)
    fut = pool.submit(hostile)
    try:
        assert started.wait(120)
        assert send(host, "neighbour", "/now", method="GET").status == 200
        return fut, not fut.done()
    finally:
        pool.shutdown(wait=True)


# -- item 1: the trim stand-in --------------------------------------------------------------
def test_a_trim_over_astral_characters_is_cut_at_its_deadline_and_holds_no_neighbour(
        make_host: MakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    """100,000 distinct characters above U+FFFF, trimmed from a value of 8,000,000 of
    them: hours as a regex class (the GIL held throughout); now a linear walk that gives
    the GIL up, lends its run slot, and is cut with the budget's error."""
    host = make_host(wall_budget_ms=1500)
    started = threading.Event()
    as_text = functions._as_text

    def spy(v: Any) -> str:
        if isinstance(v, str) and len(v) > 1_000_000:
            started.set()
        return as_text(v)

    monkeypatch.setattr(functions, "_as_text", spy)
    # However fast this machine walks the value, the walk is held at a chunk's edge until
    # the watch interrupts its statement: what is tested is that the walk stops there,
    # with the budget's error, and that its run slot is lent meanwhile (a fast machine
    # finished the walk inside the budget, and the test read a result).
    real_check = functions._check
    held = threading.Event()  # once: the statement after it runs as it is

    def held_until_interrupted(conn: Any) -> None:
        if started.is_set() and not held.is_set():
            held.set()
            give_up = time.monotonic() + 60  # bounded: the test fails, it does not hang
            while not conn.is_interrupted and time.monotonic() < give_up:
                time.sleep(0.005)
        real_check(conn)

    monkeypatch.setattr(functions, "_check", held_until_interrupted)
    sql = ("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999), "
           "s(c) AS (SELECT group_concat(char(65536 + i), '') FROM n) "
           "SELECT length(trim(replace(hex(zeroblob(40)), '0', c), c)) FROM s")
    body = json.dumps({"sql": sql}).encode()
    fut, served = served_while(host, started, lambda: send(host, "hostile", "/sql", body=body))
    assert served
    # The guest's SQL error, or, if the epoch at the same deadline cut the guest before it
    # answered, the host's budget error: a busy machine decides which.
    try:
        answer = fut.result()
    except BudgetExceeded as e:
        assert "wall-clock budget" in str(e)
    else:
        assert answer.status == 200 and b"wall-clock budget" in answer.body
    after = send(host, "hostile", "/sql", body=b'{"sql": "SELECT trim(\'xax\', \'x\')"}')
    assert json.loads(after.body) == {"rows": [["a"]]}


# -- item 2: learning a schema image ---------------------------------------------------------
def test_learning_a_long_schema_image_lends_its_run_slot(
        make_host: MakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay of 2,000 CREATE TABLEs (SQLite scans the schema for each: seconds)
    after the class's first on-init: the neighbour is served while it runs."""
    monkeypatch.setattr(images, "IMAGE_MAX_BYTES", 1 << 30, raising=False)  # kept
    host = make_host()
    started = threading.Event()
    real = schema_learning.build_schema_image

    def spy(*args: Any, **kw: Any) -> Any:
        started.set()
        return real(*args, **kw)

    monkeypatch.setattr(schema_learning, "build_schema_image", spy)
    fut, served = served_while(host, started, lambda: send(host, "tables-2000", "/now"))
    assert served
    assert fut.result().status == 200
    assert host.classes["hd"].schema_image is not None


def test_a_schema_image_past_its_cap_is_given_up_and_the_actors_still_work(
        make_host: MakeHost, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """2,500 tables make an image of 2,500 pages, over the cap: the class gets no image
    (logged once), its actors are made from the plain template and work, and learning
    left no file, in the data directory or outside it."""
    files._template_bytes()  # the host's own template, made once a process, beforehand
    made_outside: list[str] = []
    for name in ("mkdtemp", "mkstemp"):
        real = getattr(tempfile, name)
        monkeypatch.setattr(tempfile, name, lambda *a, real=real, name=name, **kw: (
            made_outside.append(name), real(*a, **kw))[1])
    host = make_host()
    with caplog.at_level(logging.INFO, logger="wkhost"):
        for actor_id in ("tables-2500", "tables-2500-b"):
            answer = send(host, actor_id, "/sql", body=COUNT_TABLES)
            assert json.loads(answer.body) == {"rows": [[2500]]}
    assert made_outside == []
    cls = host.classes["hd"]
    assert cls.schema_image is None and not cls.schema_learning
    given_up = [r.getMessage() for r in caplog.records if "schema image" in r.getMessage()]
    assert given_up == [f"class hd: no schema image (it would be over "
                        f"{images.IMAGE_MAX_BYTES} bytes)"]
    left = [p.name for p in (tmp_path / "data").rglob("*wk-schema-*")]
    assert left == []


def test_learning_is_cut_at_the_deadline_lends_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """build_schema_image under a deadline that comes first: interrupted, its loan
    taken back, and no file left in the directory it was given."""
    monkeypatch.setattr(images, "IMAGE_MAX_BYTES", 1 << 30)
    lent: list[str] = []

    def loan() -> Callable[[], None]:
        lent.append("lent")
        return lambda: lent.append("back")

    script = " ".join(f"CREATE TABLE t{i} (a);" for i in range(6000))
    with pytest.raises(images.apsw.InterruptError):
        images.build_schema_image(script, tmp_path, time.monotonic() + 0.05, loan)
    assert lent == ["lent", "back"]
    assert list(tmp_path.iterdir()) == []
