"""wkguest.types and wkguest.errors, and what imports on plain CPython (no bindings)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from wkguest.errors import (
    AlarmError,
    CallError,
    FetchError,
    InitError,
    SqliteError,
    WkError,
)
from wkguest.types import ActorRef, HttpResponse, Request, Response, Sender


def test_sender_kinds() -> None:
    ref = ActorRef("room", "r1")
    assert str(ref) == "room/r1"
    a = Sender("actor", ref)
    assert a.is_actor and not a.is_public and not a.is_operator
    assert Sender("public").is_public and Sender("operator").is_operator
    with pytest.raises(AttributeError):
        setattr(ref, "id", "x")  # noqa: B010  # frozen: the assignment itself must fail


def test_request_helpers() -> None:
    r = Request("POST", "/x", "a=1&b=&a=2", [("content-type", "application/json")], b'{"k": 1}')
    assert r.header("Content-Type") == "application/json"
    assert r.header("x-missing") is None
    assert r.json() == {"k": 1}
    assert r.text() == '{"k": 1}'
    assert r.arg("a") == "1" and r.arg("b") == "" and r.arg("c", "d") == "d"
    assert r.sender.is_public  # the default, least trusted


def test_response_constructors() -> None:
    t = Response.text("héllo", status=201)
    assert (t.status, t.body, t.header("content-type")) == (
        201, "héllo".encode(), "text/plain; charset=utf-8")
    j = Response.json({"a": [1, None]})
    assert json.loads(j.body) == {"a": [1, None]} and j.header("Content-Type") == "application/json"
    b = Response.bytes(bytearray(b"\x00\xff"), content_type="image/png")
    assert b.body == b"\x00\xff" and type(b.body) is bytes
    assert b.header("content-type") == "image/png"
    assert Response() == Response(200, [], b"")
    assert Response().headers is not Response().headers  # no shared mutable default


def test_http_response_helpers() -> None:
    r = HttpResponse(404, [("X-A", "1")], b'"nope"')
    assert r.header("x-a") == "1" and r.json() == "nope" and r.text() == '"nope"'


def test_error_tree() -> None:
    for cls in (SqliteError, AlarmError, CallError, FetchError, InitError):
        assert issubclass(cls, WkError)
    assert CallError("refused: re-entry").reason == "refused: re-entry"
    assert SqliteError("no such table: t").message == "no such table: t"
    # The kind the host gave beside the text, or (made without one) the plainest.
    assert CallError("refused: re-entry", "refused").kind == "refused"
    assert CallError("x").kind == "other" and SqliteError("x").kind == "sql"
    assert str(SqliteError("interrupted: ...", "narrowed-deadline")) == "interrupted: ..."


@pytest.mark.parametrize(
    ("reason", "kind", "message"),
    [
        ("denied: 10.0.0.1 is not allowed", "denied", "10.0.0.1 is not allowed"),
        ("timeout: after 5000 ms", "timeout", "after 5000 ms"),
        ("too-large: body over 10 MiB", "too-large", "body over 10 MiB"),
        ("incomplete: connection reset", "incomplete", "connection reset"),
        ("connect: refused", "connect", "refused"),
        ("invalid: not an absolute URL", "invalid", "not an absolute URL"),
        ("something odd", "invalid", "something odd"),
        ("weird: thing", "invalid", "weird: thing"),
    ],
)
def test_fetch_error_parsing(reason: str, kind: str, message: str) -> None:
    e = FetchError.from_reason(reason)
    assert (e.kind, e.message) == (kind, message)
    assert str(e) == f"{kind}: {message}"


def test_plain_cpython_imports_without_bindings() -> None:
    # A fresh interpreter, so nothing another test imported can help.
    code = textwrap.dedent("""
        import sys, wkguest, wkguest.codec, wkguest.errors, wkguest.types
        assert "wit_world" not in sys.modules
        assert (wkguest.WIT_DIR / "world.wit").is_file(), wkguest.WIT_DIR
        assert wkguest.Request is wkguest.types.Request and wkguest.errors.WkError
        try:
            wkguest.Actor
        except ModuleNotFoundError as e:
            assert e.name in ("wit_world", "componentize_py_types"), e
        else:
            raise AssertionError("wkguest.Actor needs the bindings")
        try:
            wkguest.nope
        except AttributeError:
            pass
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
