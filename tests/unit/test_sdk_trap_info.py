# mypy: allow-subclassing-any
"""The guest SDK's side of `lifecycle.last-trap-info` and `report-exception`, on CPython
against the real generated bindings (as tests/unit/test_sdk_bindings.py): the typed
accessor, what a report sends, and `export`'s handler reporting exactly the exceptions
that trap, before they trap."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from wkhost.traps import TrapKind as HostTrapKind

from tests.unit.fresh_bindings import fresh_bindings


@pytest.fixture(scope="module")
def wit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with fresh_bindings(tmp_path_factory.mktemp("bindings")) as imports:
        yield imports


@pytest.fixture
def reports(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []
    monkeypatch.setattr(wit.lifecycle, "report_exception",
                        lambda t, m, tb: seen.append((t, m, tb)))
    return seen


def test_last_trap_info_is_typed(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from wkguest import lifecycle

    L = wit.lifecycle
    exc = L.GuestException(type_name="ValueError", message="bad", traceback="tb")
    monkeypatch.setattr(L, "last_trap_info", lambda: L.TrapInfo(
        kind=L.TrapKind.NARROWED_DEADLINE, message="why", exception=exc))
    assert lifecycle.last_trap_info() == lifecycle.TrapInfo(
        lifecycle.TrapKind.NARROWED_DEADLINE, "why",
        lifecycle.ReportedException("ValueError", "bad", "tb"))
    monkeypatch.setattr(L, "last_trap_info", lambda: None)
    assert lifecycle.last_trap_info() is None


def test_the_sdks_kinds_are_the_bindings_and_the_hosts(wit: ModuleType) -> None:
    from wkguest import lifecycle

    assert [k.name for k in lifecycle.TrapKind] == [k.name for k in wit.lifecycle.TrapKind]
    # The host's kinds a guest can read (a refused cluster write, the host's LEASE_LOST,
    # reads as HOST).
    seen = [k.value for k in HostTrapKind if k.seen_by_guest() is k]
    assert [k.value for k in lifecycle.TrapKind] == seen


class ThisFailed(ValueError):
    pass


def test_a_report_names_the_type_and_keeps_the_traceback(
        reports: list[tuple[str, str, str]]) -> None:
    from wkguest import lifecycle

    try:
        raise ThisFailed("x" * 10_000)
    except ThisFailed as e:
        lifecycle.report_exception(e)
    try:
        raise KeyError("k")
    except KeyError as e:
        lifecycle.report_exception(e)
    (name, message, tb), (builtin, key, _) = reports
    assert name == f"{__name__}.ThisFailed" and message == "x" * 4096
    assert "in test_a_report_names_the_type_and_keeps_the_traceback" in tb
    assert (builtin, key) == ("KeyError", "'k'")


def test_a_report_never_raises(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from wkguest import lifecycle

    class NoStr(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    sent: list[str] = []
    monkeypatch.setattr(wit.lifecycle, "report_exception", lambda t, m, tb: sent.append(m))
    lifecycle.report_exception(NoStr())
    assert sent == ["<NoStr: its str() failed>"]

    def broken(*_: Any) -> None:
        raise MemoryError

    monkeypatch.setattr(wit.lifecycle, "report_exception", broken)
    lifecycle.report_exception(ValueError("v"))  # nothing raised


def test_export_reports_what_traps_and_only_that(
        wit: ModuleType, reports: list[tuple[str, str, str]]) -> None:
    from componentize_py_types import Err
    from wkguest import Actor, Request, Response, export

    class Abort(BaseException):
        pass

    class Fails(Actor):
        def handle(self, req: Request) -> Response:
            if req.path == "/ok":
                return Response.text("ok")
            raise ThisFailed("handled badly")

        def on_alarm(self) -> None:
            raise Abort("alarm aborted")

        def on_init(self) -> None:
            raise RuntimeError("an error result, not a trap")

    T = wit.types
    h = export(Fails)()
    assert h.handle(T.Request("GET", "/ok", "", [], ""), T.Sender_Public()).status == 200
    with pytest.raises(Err):
        h.on_init()
    assert reports == []  # nothing trapped yet
    with pytest.raises(ThisFailed):
        h.handle(T.Request("GET", "/no", "", [], ""), T.Sender_Public())
    with pytest.raises(Abort):
        h.on_alarm()
    assert [(t.rsplit(".", 1)[-1], m) for t, m, _ in reports] == [
        ("ThisFailed", "handled badly"), ("Abort", "alarm aborted")]
