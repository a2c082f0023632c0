"""Ids never escape the data directory, and the encoding never maps two ids to one file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wkhost.errors import BadRequest
from wkhost.storage import paths

HOSTILE = ["../../etc/passwd", "..", ".", "/", "a/b", "\\..\\x", "CON", "a" * 256,
           "é", "Ａ", "\u202e", " ", "x.db", "%2e%2e", "=abc", ".2e"]


@pytest.mark.parametrize("actor_id", HOSTILE)
def test_hostile_ids_stay_inside_the_data_dir(tmp_path: Path, actor_id: str) -> None:
    path = paths.db_path(tmp_path, "c", paths.check_id(actor_id)).resolve()
    assert path.is_relative_to((tmp_path / "actors" / "c").resolve())
    assert path.parent.parent == (tmp_path / "actors" / "c").resolve()


@pytest.mark.parametrize("bad", ["", "a\x00b", "x" * 257, "é" * 129, "\ud800"])
def test_bad_ids_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(BadRequest):
        paths.check_id(bad)


def test_case_only_differences_map_to_different_files_on_any_filesystem() -> None:
    a, b = paths.encode_id("Order-1"), paths.encode_id("order-1")
    assert a.lower() != b.lower()


@given(st.text(min_size=1, max_size=80).filter(lambda s: "\x00" not in s),
       st.text(min_size=1, max_size=80).filter(lambda s: "\x00" not in s))
def test_encoding_is_injective_even_case_folded(x: str, y: str) -> None:
    try:
        paths.check_id(x)
        paths.check_id(y)
    except BadRequest:
        return
    if x != y:
        assert paths.encode_id(x).lower() != paths.encode_id(y).lower()


@given(st.text(min_size=1, max_size=60).filter(lambda s: "\x00" not in s))
def test_short_encodings_decode_back(x: str) -> None:
    try:
        paths.check_id(x)
    except BadRequest:
        return
    enc = paths.encode_id(x)
    assert set(enc) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-.=")
    if not enc.startswith("="):
        assert paths.decode_id(enc) == x


def test_long_ids_are_hashed_and_fit_a_file_name() -> None:
    enc = paths.encode_id("€" * 85)
    assert enc.startswith("=") and len(enc) < 100


@pytest.mark.parametrize("name", ["", "A", "1a", "a/b", "_wk", "a" * 64, "a b"])
def test_bad_class_names(name: str) -> None:
    with pytest.raises(BadRequest):
        paths.check_class(name)
