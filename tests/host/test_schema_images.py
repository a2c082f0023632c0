"""Schema images (host/storage/actordb.py): a class's new actors start from the template with the
schema their on-init makes already applied, and no guest ever sees a table it did not
make. The probe's actors "schema-a..." and "schema-b..." run one script each in on-init
(SCHEMA_A, SCHEMA_B in tests/guests/probe.py); the others run two statements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import wkhost.storage.files
from wkhost.storage import paths

from .support import MakeProbe, Probe

TABLES = "SELECT type, name FROM sqlite_master WHERE name NOT LIKE '_wk_host_%' ORDER BY name"
A_TABLES = [["table", "a_one"], ["index", "a_one_v"], ["index", "sqlite_autoindex_a_one_1"]]


@pytest.fixture
def made_from(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """For each actor's database file the host makes: "image" or "template"."""
    seen: list[str] = []
    real = wkhost.storage.files.create_from_template

    def spy(path: Path, data: bytes | None = None) -> None:
        if "wk-schema-" not in str(path):  # not the image being made, on the side
            seen.append("template" if data is None else "image")
        real(path, data)

    monkeypatch.setattr(wkhost.storage.files, "create_from_template", spy)
    return seen


def tables(probe: Probe, actor_id: str) -> Any:
    return probe.sql(actor_id, TABLES)["rows"]


def test_new_actors_start_from_the_image_their_classes_on_init_makes(
        probe: Probe, made_from: list[str]) -> None:
    assert tables(probe, "schema-a1") == A_TABLES  # learnt from this one's on-init
    image = probe.host.classes["probe"].schema_image
    assert image is not None and image.script.startswith("CREATE TABLE a_one")
    for i in (2, 3):
        actor = f"schema-a{i}"
        # Its on-init's script, which would fail on a database that has the tables,
        # was not run again: the database already was what it makes.
        assert tables(probe, actor) == A_TABLES
        probe.sql(actor, "INSERT INTO a_one VALUES ('k', ?)", [i])
        assert probe.sql(actor, "SELECT v FROM a_one")["rows"] == [[i]]
        assert probe.sql(actor, "PRAGMA integrity_check")["rows"] == [["ok"]]
    assert made_from == ["template", "image", "image"]
    assert probe.host.list_actors("probe") == ["schema-a1", "schema-a2", "schema-a3"]


def test_an_on_init_that_does_something_else_first_never_sees_the_image(
        probe: Probe, made_from: list[str]) -> None:
    tables(probe, "schema-a1")
    # Its first statement is not the image's script: the plain template comes back
    # before that statement runs, with the host's own rows.
    assert tables(probe, "schema-b1") == [["table", "b_one"]]
    assert probe.host.classes["probe"].schema_image is None  # and the class stops
    # A probe actor of the usual kind (two statements in its on-init) is made whole.
    assert probe.sql("plain", "SELECT kind FROM log")["rows"] == [["init"]]
    assert tables(probe, "schema-a2") == A_TABLES
    assert made_from == ["template", "image", "template", "template", "template"]
    assert probe.host.list_actors("probe") == ["plain", "schema-a1", "schema-a2", "schema-b1"]


def test_an_on_init_that_runs_no_sql_gets_the_plain_template_back(
        probe: Probe, made_from: list[str]) -> None:
    tables(probe, "schema-a1")
    assert tables(probe, "nosql-1") == []
    assert probe.sql("nosql-1", "PRAGMA integrity_check")["rows"] == [["ok"]]
    assert made_from == ["template", "image", "template"]
    assert probe.host.classes["probe"].schema_image is None


def test_an_image_file_left_without_the_hosts_rows_starts_clean(
        make_probe: MakeProbe, tmp_path: Path, made_from: list[str]) -> None:
    # The host died after writing a new actor's file from an image and before its own
    # first rows: on-init has yet to run, and must run on the plain template.
    probe = make_probe()
    tables(probe, "schema-a1")
    image = probe.host.classes["probe"].schema_image
    assert image is not None
    path = paths.db_path(tmp_path / "data", "probe", "schema-b1")
    wkhost.storage.files.create_from_template(path, image.data)
    assert tables(probe, "schema-b1") == [["table", "b_one"]]


def test_schema_images_can_be_turned_off(make_probe: MakeProbe, made_from: list[str]) -> None:
    probe = make_probe(schema_images=False)
    for actor in ("schema-a1", "schema-a2"):
        assert tables(probe, actor) == A_TABLES
    assert made_from == ["template", "template"]
    assert probe.host.classes["probe"].schema_image is None
