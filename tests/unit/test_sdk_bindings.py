# mypy: allow-subclassing-any
"""The bindings-backed SDK modules on CPython, against the real generated bindings.

`componentize-py bindings` writes the same `wit_world` package a build generates (its
import functions just raise NotImplementedError); each test replaces the host functions it
needs with fakes. Every module is as it was afterwards (fresh_bindings.py), so other tests
see what they saw before.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any, cast

import pytest

from tests.unit.fresh_bindings import fresh_bindings


@pytest.fixture(scope="module")
def wit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with fresh_bindings(tmp_path_factory.mktemp("bindings")) as imports:
        yield imports


def test_sqlite_exec_maps_values_both_ways(
    wit: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wkguest import sqlite

    S = wit.sqlite
    seen: list[Any] = []

    def fake_exec(sql: str, params: list[Any]) -> Any:
        seen.append((sql, params))
        row = [S.Value_Null(), S.Value_Integer(7), S.Value_Real(1.5), S.Value_Text("t"),
               S.Value_Blob("\x00\xff")]
        return S.Rows(columns=list("abcde"), rows=[row], changes=1, last_insert_rowid=9)

    monkeypatch.setattr(S, "exec", fake_exec)
    rows = sqlite.exec("SELECT ?", (None, True, 2, 0.5, "s", b"\x01\xfe", bytearray(b"z")))
    assert seen[0][1] == [S.Value_Null(), S.Value_Integer(1), S.Value_Integer(2),
                          S.Value_Real(0.5), S.Value_Text("s"), S.Value_Blob("\x01\xfe"),
                          S.Value_Blob("z")]
    assert rows.rows == [(None, 7, 1.5, "t", b"\x00\xff")]
    assert (rows.columns, rows.changes, rows.last_insert_rowid) == (list("abcde"), 1, 9)
    assert rows.first() == rows.rows[0] and rows.scalar() is None
    with pytest.raises(TypeError):
        sqlite.exec("SELECT ?", (2**63,))


def test_sqlite_errors_and_query(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from componentize_py_types import Err
    from wkguest import sqlite
    from wkguest.errors import SqliteError

    def failing(sql: str, params: list[Any]) -> Any:
        raise Err("no such table: t")

    monkeypatch.setattr(wit.sqlite, "exec_durable", failing)
    monkeypatch.setattr(wit.sqlite, "last_error", lambda: wit.sqlite.SqlError(
        kind=wit.sqlite.SqlErrorKind.SQL, message="no such table: t"))
    with pytest.raises(SqliteError, match="no such table: t") as info:
        sqlite.exec_durable("SELECT * FROM t")
    assert info.value.kind == "sql"
    monkeypatch.setattr(wit.sqlite, "query_packed", lambda sql, p: '[["a"],[1],[{"b64":"AA=="}]]')
    assert sqlite.query("SELECT a FROM t") == [(1,), (b"\x00",)]
    assert sqlite.query_packed("x").startswith('[["a"]')
    assert sqlite.Rows().scalar() is None and sqlite.Rows().first() is None


def test_sqlite_write(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from componentize_py_types import Err
    from wkguest import sqlite
    from wkguest.errors import ReadOnlyError, SqliteError

    S = wit.sqlite
    seen: list[Any] = []

    def fake_write(sql: str, params: list[Any], durable: bool) -> int:
        seen.append((sql, params, durable))
        if sql.startswith("BAD"):
            raise Err("near BAD: syntax error")
        return 2

    monkeypatch.setattr(S, "exec_write", fake_write)
    assert sqlite.write("UPDATE t SET a = ?", (True, b"\x01")) == 2
    assert sqlite.write("UPDATE t SET a = 1", durable=True) == 2
    assert seen == [("UPDATE t SET a = ?", [S.Value_Integer(1), S.Value_Blob("\x01")], False),
                    ("UPDATE t SET a = 1", [], True)]
    monkeypatch.setattr(S, "last_error", lambda: S.SqlError(
        kind=S.SqlErrorKind.NARROWED_DEADLINE, message="near BAD: syntax error"))
    with pytest.raises(SqliteError, match="syntax error") as info:
        sqlite.write("BAD")
    assert info.value.kind == "narrowed-deadline"  # the host's kind, whatever the words
    monkeypatch.setattr(S, "last_error", lambda: S.SqlError(
        kind=S.SqlErrorKind.READ_ONLY, message="near BAD: syntax error"))
    with pytest.raises(ReadOnlyError, match="syntax error"):
        sqlite.write("BAD")
    # Subclasses take the slow path and cross as their base type.
    class Name(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 3

    seen.clear()
    sqlite.write("X", (Name("n"), Level.HIGH, None, None, -(2**63), 2**63 - 1))
    assert seen[0][1] == [S.Value_Text("n"), S.Value_Integer(3), S.Value_Null(),
                          S.Value_Null(), S.Value_Integer(-(2**63)),
                          S.Value_Integer(2**63 - 1)]
    with pytest.raises(TypeError):
        sqlite.write("X", "not a sequence of params")
    with pytest.raises(TypeError):
        sqlite.write("X", (-(2**63) - 1,))
    with pytest.raises(TypeError):
        sqlite.write("UPDATE t SET a = ?", (object(),))


def test_alarm(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from componentize_py_types import Err
    from wkguest import alarm
    from wkguest.errors import AlarmError

    state: dict[str, int | None] = {"at": None}
    monkeypatch.setattr(wit.alarm, "set", lambda at: state.update(at=at))
    monkeypatch.setattr(wit.alarm, "get", lambda: state["at"])
    alarm.set(123)
    assert alarm.get() == 123
    with pytest.raises(ValueError):
        alarm.set(-1)

    def refuse() -> None:
        raise Err("database is locked")

    monkeypatch.setattr(wit.alarm, "clear", refuse)
    with pytest.raises(AlarmError, match="locked"):
        alarm.clear()


def test_actors_call(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from componentize_py_types import Err
    from wkguest import actors
    from wkguest.errors import CallError

    T = wit.types
    seen: list[Any] = []

    def fake_call(target: Any, req: Any) -> Any:
        seen.append((target, req))
        if target.class_ == "nope":
            raise Err("unknown class: nope")
        return T.Response(status=201, headers=[("a", "b")], body="\xff")

    monkeypatch.setattr(wit.actors, "call", fake_call)
    r = actors.call("room", "r1", "PUT", "/x", "é", [("h", "v")], "q=1")
    assert (r.status, r.headers, r.body) == (201, [("a", "b")], b"\xff")
    target, req = seen[0]
    assert target == T.ActorRef(class_="room", id="r1")
    assert req == T.Request(method="PUT", path="/x", query="q=1", headers=[("h", "v")],
                            body="é".encode().decode("latin-1"))
    monkeypatch.setattr(wit.actors, "last_error", lambda: wit.actors.CallError(
        kind=wit.actors.CallErrorKind.UNKNOWN_CLASS, message="unknown class: nope"))
    with pytest.raises(CallError) as info:
        actors.call("nope", "x")
    assert info.value.reason == "unknown class: nope"
    assert info.value.kind == "unknown-class"


def test_each_error_kind_of_the_wit_is_one_the_sdk_names(wit: ModuleType) -> None:
    """The SDK reads a kind by its case's name (sqlite.py, actors.py): every case of
    the WIT's enums is one of the SDK's kinds, and the SDK names no other."""
    from typing import get_args

    from wkguest.errors import CallErrorKind, FetchKind, SqlErrorKind

    for enum_type, kinds in ((wit.sqlite.SqlErrorKind, SqlErrorKind),
                             (wit.actors.CallErrorKind, CallErrorKind),
                             (wit.http.FetchErrorKind, FetchKind)):
        named = [case.name.lower().replace("_", "-") for case in enum_type]
        assert named == list(get_args(kinds))


def test_http_fetch(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from componentize_py_types import Err
    from wkguest import http
    from wkguest.errors import FetchError

    seen: list[Any] = []

    def fake_fetch(req: Any) -> Any:
        seen.append(req)
        if "blocked" in req.url:
            raise Err("denied: 10.0.0.1 is not allowed")
        return wit.http.HttpResponse(status=500, headers=[], body='{"x":1}')

    monkeypatch.setattr(wit.http, "fetch", fake_fetch)
    r = http.fetch("http://a/", "POST", [("k", "v")], b"\x80", timeout_ms=250)
    assert (r.status, r.json()) == (500, {"x": 1})
    assert (seen[0].body, seen[0].timeout_ms, seen[0].headers) == ("\x80", 250, [("k", "v")])
    H = wit.http  # noqa: N806
    monkeypatch.setattr(H, "last_error", lambda: H.FetchError(
        kind=H.FetchErrorKind.DENIED, message="denied: 10.0.0.1 is not allowed"))
    with pytest.raises(FetchError) as info:
        http.fetch("http://blocked/")
    assert (info.value.kind, info.value.message) == ("denied", "10.0.0.1 is not allowed")
    # The host's kind, whatever the words; the text stays the host's.
    monkeypatch.setattr(H, "last_error", lambda: H.FetchError(
        kind=H.FetchErrorKind.NARROWED_DEADLINE, message="timeout: ..."))
    with pytest.raises(FetchError) as info:
        http.fetch("http://blocked/")
    assert (info.value.kind, str(info.value)) == ("narrowed-deadline",
                                                  "denied: 10.0.0.1 is not allowed")


def test_lifecycle(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from wkguest import lifecycle
    from wkguest.types import ActorRef

    monkeypatch.setattr(wit.lifecycle, "self_ref", lambda: wit.types.ActorRef(class_="c", id="i"))
    monkeypatch.setattr(wit.lifecycle, "now", lambda: 1_700_000_000_000)
    deleted: list[bool] = []
    monkeypatch.setattr(wit.lifecycle, "delete_self", lambda: deleted.append(True))
    assert lifecycle.self_ref() == ActorRef("c", "i")
    assert lifecycle.now() == 1_700_000_000_000
    lifecycle.delete_self()
    assert deleted == [True]


def test_lifecycle_fuel_used_and_holder(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from wkguest import lifecycle

    monkeypatch.setattr(wit.lifecycle, "fuel_used", lambda: 123_456)
    monkeypatch.setattr(wit.lifecycle, "holder", lambda: "process 1 of 2 (pid 7)")
    assert lifecycle.fuel_used() == 123_456
    assert lifecycle.holder() == "process 1 of 2 (pid 7)"
    monkeypatch.setattr(wit.lifecycle, "now_and_fuel", lambda: (1_700_000_000_001, 99))
    assert lifecycle.now_and_fuel() == (1_700_000_000_001, 99)


def test_lifecycle_narrow_deadline_and_its_trap_reason(
        wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reason is spelled on both sides of the WIT boundary, which can share no module:
    the host makes it (wkhost.engine.instance), the guest SDK tells a timed-out attempt by
    it (wkguest.lifecycle)."""
    from wkguest import lifecycle
    from wkhost.engine import instance

    seen: list[int | None] = []
    monkeypatch.setattr(wit.lifecycle, "narrow_deadline", seen.append)
    lifecycle.narrow_deadline(250)
    lifecycle.narrow_deadline(None)
    assert seen == [250, None]
    assert lifecycle.NARROWED_REASON == instance.NARROWED
    assert "narrow_deadline" in lifecycle.__all__


def test_attributes_publish(wit: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from componentize_py_types import Err
    from wkguest import attributes

    seen: list[Any] = []

    def fake_publish(status: str, updated_ms: int, labels: Any) -> None:
        seen.append((status, updated_ms, labels))
        if status == "bad":
            raise Err("not published: a status has 1 to 64 bytes")

    monkeypatch.setattr(wit.attributes, "publish", fake_publish)
    attributes.publish("waiting", 5, {"region": "eu"})
    attributes.publish("waiting", 6)
    assert seen == [("waiting", 5, [("region", "eu")]), ("waiting", 6, None)]
    with pytest.raises(attributes.PublishError, match="1 to 64 bytes"):
        attributes.publish("bad", 7)


# ---- export() -------------------------------------------------------------------------


def test_export_converts_requests_and_responses(wit: ModuleType) -> None:
    from wkguest import Actor, Request, Response, export

    T = wit.types
    made: list[int] = []

    class Echo(Actor):
        def __init__(self) -> None:
            made.append(1)

        def handle(self, req: Request) -> Response:
            actor = req.sender.actor
            who = f"{req.sender.kind}:{actor.cls + '/' + actor.id if actor else ''}"
            return Response(202, [("x-who", who), ("x-q", req.query)], req.body)

    Handler = export(Echo)
    assert made == []  # lazy: nothing is created at build (import) time
    req = T.Request(method="POST", path="/p", query="a=1", headers=[("h", "v")], body="\x00\xff")
    out = Handler().handle(req, T.Sender_Actor(T.ActorRef(class_="room", id="r1")))
    assert out == T.Response(status=202, headers=[("x-who", "actor:room/r1"), ("x-q", "a=1")],
                             body="\x00\xff")
    assert Handler().handle(req, T.Sender_Operator()).headers[0] == ("x-who", "operator:")
    assert Handler().handle(req, T.Sender_Public()).headers[0] == ("x-who", "public:")
    assert made == [1]  # one actor object per instance, however many Handler objects


def test_export_freezes_the_heap_only_in_a_guest(wit: ModuleType,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from wkguest import Actor, export

    before = gc.get_freeze_count()
    export(Actor)
    assert gc.get_freeze_count() == before  # plain CPython (a test process): left alone
    monkeypatch.setattr(sys, "platform", "wasi")
    try:
        export(Actor)
        assert gc.get_freeze_count() > before  # what componentize-py snapshots
    finally:
        gc.unfreeze()


def test_export_default_handle_is_404(wit: ModuleType) -> None:
    from wkguest import Actor, export

    T = wit.types
    out = export(Actor)().handle(T.Request("GET", "/", "", [], ""), T.Sender_Public())
    assert out.status == 404


def test_hook_exceptions_become_errors(wit: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    from componentize_py_types import Err
    from wkguest import Actor, export
    from wkguest.errors import InitError

    class Refuses(Actor):
        def on_init(self) -> None:
            raise InitError("not today")

        def on_alarm(self) -> None:
            raise ValueError("bad state")

    h = export(Refuses)()
    with pytest.raises(Err) as info:
        h.on_init()
    assert info.value.value == "not today"
    with pytest.raises(Err) as info:
        h.on_alarm()
    assert info.value.value == "on_alarm failed: ValueError: bad state"
    assert "ValueError: bad state" in capsys.readouterr().err  # traceback for the host log


def test_handle_exceptions_and_base_exceptions_propagate(wit: ModuleType) -> None:
    from wkguest import Actor, Request, Response, export

    class Boom(BaseException):
        pass

    class Breaks(Actor):
        def on_init(self) -> None:
            raise Boom()

        def handle(self, req: Request) -> Response:
            raise KeyError("x")

    T = wit.types
    h = export(Breaks)()
    with pytest.raises(KeyError):  # must trap: the host answers 500
        h.handle(T.Request("GET", "/", "", [], ""), T.Sender_Public())
    with pytest.raises(Boom):
        h.on_init()


@pytest.mark.parametrize("bad", [b"raw", None, "text", {"a": 1}])
def test_handle_must_return_a_response(wit: ModuleType, bad: object) -> None:
    from wkguest import Actor, Request, export

    class Wrong(Actor):
        def handle(self, req: Request) -> Any:
            return bad

    T = wit.types
    with pytest.raises(TypeError, match="Wrong.handle returned"):
        export(Wrong)().handle(T.Request("GET", "/", "", [], ""), T.Sender_Public())


@pytest.mark.parametrize(
    ("status", "body", "exc"), [(200, "a str", TypeError), (99, b"", ValueError),
                                (600, b"", ValueError)]
)
def test_response_checks(wit: ModuleType, status: int, body: Any, exc: type[Exception]) -> None:
    from wkguest import Actor, Request, Response, export

    class Bad(Actor):
        def handle(self, req: Request) -> Response:
            return Response(status, [], body)

    T = wit.types
    with pytest.raises(exc):
        export(Bad)().handle(T.Request("GET", "/", "", [], ""), T.Sender_Public())


def test_export_needs_an_actor_class(wit: ModuleType) -> None:
    from wkguest import export

    with pytest.raises(TypeError):
        export(cast(Any, object))
