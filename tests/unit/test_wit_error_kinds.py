"""The host's error kinds are the WIT's (host/interfaces/actors.py, sqlite.py): every
host error an actor call can fail with maps to a case of `actors.call-error-kind`, each
case is reachable, and the kinds the sqlite interface notes are `sql-error-kind`'s."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from wkhost import errors
from wkhost.errors import DeadlineExceeded, HostError, NotThatProtocol
from wkhost.interfaces import sqlite
from wkhost.interfaces.actors import error_kind

WIT = Path(__file__).resolve().parents[2] / "wit" / "world.wit"


def cases(enum: str) -> list[str]:
    body = re.search(r"enum " + enum + r" \{(.*?)\}", WIT.read_text(), re.S)
    assert body is not None, enum
    lines = (line.strip() for line in body.group(1).splitlines())
    return [line.rstrip(",") for line in lines if line and not line.startswith("//")]


def cut(narrowed: bool) -> Callable[[], bool]:
    """The calling event's answer to "were you cut at your narrowed deadline?"."""
    return lambda: narrowed


def _classes(base: type[HostError]) -> list[type[HostError]]:
    return [base, *(c for sub in base.__subclasses__() for c in _classes(sub))]


CLASSES = [c for c in _classes(HostError) if c.__module__ == errors.__name__]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_host_error_is_a_case_of_call_error_kind(cls: type[HostError]) -> None:
    assert error_kind(cls("why"), cut(False)) in cases("call-error-kind")


def test_every_case_but_other_is_told_apart() -> None:
    told = {error_kind(c("why"), cut(False)) for c in CLASSES}
    told.add(error_kind(DeadlineExceeded("why"), cut(True)))
    assert told == set(cases("call-error-kind"))
    assert error_kind(NotThatProtocol("why"), cut(True)) == "not-declared"
    assert error_kind(DeadlineExceeded("why"), cut(False)) == "deadline"


def test_the_sqlite_interfaces_kinds_are_sql_error_kinds() -> None:
    kinds = [sqlite.SQL, sqlite.READ_ONLY, sqlite.DEADLINE, sqlite.NARROWED_DEADLINE,
             sqlite.STORAGE]
    assert cases("sql-error-kind") == kinds
