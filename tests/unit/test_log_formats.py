"""host/logs.py's two formats: every line, whatever its message, its fields or its
traceback hold, reads back (as logfmt, with a strict parser; as JSON) to exactly what was
logged, on one line, as UTF-8; keys come in the same order (ts, level, logger, msg, the
fields, exc); a value that needs no quotes has none."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from wkhost import logs
from wkhost.types import ActorRef

from ..log_parsing import BadLine, parse_json, parse_logfmt

HOSTILE = [
    'say "hi"',
    "back\\slash\\",
    "\\",
    '\\"',
    "two\nlines\r\nand\ttab",
    "a=b c=d",
    'x msg="forged" level=error',
    "unicode: é 二 🎉 \u202eRTL",
    "lone \udc80 surrogate \ud800",
    "\x00nul \x1bescape \x7fdel \x85nel \u2028ls",
    "",
    "   ",
    "\u00a0nbsp",
    "long " + "é\"\\" * 40_000,
]
FORMATS = {"logfmt": (logs.KeyValueFormatter, parse_logfmt),
           "json": (logs.JsonFormatter, parse_json)}


@pytest.fixture(params=list(FORMATS))
def fmt(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Captured:
    def __init__(self, fmt: str) -> None:
        formatter, self.parse = FORMATS[fmt]
        self.stream = io.StringIO()
        handler = logging.StreamHandler(self.stream)
        handler.setFormatter(formatter())
        self.log = logging.getLogger(f"test.logs.{fmt}")
        self.log.handlers[:] = [handler]
        self.log.propagate = False
        self.log.setLevel(logging.DEBUG)

    def lines(self) -> list[str]:
        return self.stream.getvalue().split("\n")[:-1]

    def one(self) -> dict[str, Any]:
        lines = self.lines()
        assert len(lines) == 1, lines[:3]
        return self.parse(lines[0])  # type: ignore[no-any-return]


@pytest.fixture
def captured(fmt: str) -> Iterator[Captured]:
    c = Captured(fmt)
    yield c
    c.log.handlers[:] = []


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_message_and_field_read_back_as_they_were(
        captured: Captured, text: str) -> None:
    captured.log.warning("said: %s", text, extra={"reason": text, "id": text})
    got = captured.one()
    assert list(got)[:4] == ["ts", "level", "logger", "msg"]
    assert got["msg"] == f"said: {text}"
    assert got["reason"] == text and got["id"] == text
    assert got["level"] == "warning" and got["logger"] == captured.log.name


def test_a_traps_line_carries_class_id_event_and_reason(captured: Captured) -> None:
    ref = ActorRef("cut", 'c "1"\n=')
    reason = 'guest trapped: wasm `unreachable` "x"'
    captured.log.warning("%s: its %s event trapped: %s", ref, "alarm", reason,
                         extra=logs.actor(ref, event="alarm", reason=reason))
    got = captured.one()
    assert list(got) == ["ts", "level", "logger", "msg", "class", "id", "event", "reason"]
    assert (got["class"], got["id"], got["event"], got["reason"]) == \
        ("cut", ref.id, "alarm", reason)
    assert got["msg"] == f"{ref}: its alarm event trapped: {reason}"


def test_the_traceback_is_one_string_field_after_the_fields(captured: Captured) -> None:
    try:
        raise ValueError('bad "input"\nsecond line')
    except ValueError:
        captured.log.exception("failed", extra={"class": "k"})
    got = captured.one()
    assert list(got) == ["ts", "level", "logger", "msg", "class", "exc"]
    assert got["exc"].startswith("Traceback (most recent call last):\n")
    assert got["exc"].endswith('ValueError: bad "input"\nsecond line')
    assert got["level"] == "error"


def test_a_field_named_as_a_key_of_the_format_does_not_replace_it(
        captured: Captured) -> None:
    captured.log.info("m", extra={"ts": "forged", "level": "forged", "logger": "x"})
    got = captured.one()
    assert got["ts"] != "forged" and got["level"] == "info"
    assert (got["ts_"], got["level_"], got["logger_"]) == ("forged", "forged", "x")


def test_field_values_of_other_types(fmt: str, captured: Captured) -> None:
    captured.log.info("m", extra={"n": 3, "on": True, "none": None, "ratio": 0.5,
                                  "inf": float("inf"), "ref": ActorRef("a", "b")})
    got = captured.one()
    if fmt == "json":
        assert (got["n"], got["on"], got["none"], got["ratio"]) == (3, True, None, 0.5)
        assert (got["inf"], got["ref"]) == ("inf", "a/b")
    else:
        assert (got["n"], got["on"], got["none"], got["ratio"]) == ("3", "true", "", "0.5")
        assert (got["inf"], got["ref"]) == ("inf", "a/b")


def test_logfmt_quotes_only_the_values_that_need_it() -> None:
    c = Captured("logfmt")
    c.log.info("stopped", extra={"class": "orders", "path": "/a/b?c", "sp": "a b",
                                 "eq": "a=b", "q": 'a"b', "bs": "a\\b", "e": "", "u": "二"})
    line = c.lines()[0]
    assert re.fullmatch(r"ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=info "
                        r"logger=test\.logs\.logfmt msg=stopped .*", line), line
    assert line.endswith(' class=orders path=/a/b?c sp="a b" eq="a=b" q="a\\"b" '
                         'bs="a\\\\b" e="" u=二'), line


def test_logfmt_escapes_as_go_quotes() -> None:
    c = Captured("logfmt")
    c.log.info("%s", "q\" b\\ n\n r\r t\t nul\x00 esc\x1b sur\udc80")
    assert c.lines()[0].endswith(
        ' msg="q\\" b\\\\ n\\n r\\r t\\t nul\\u0000 esc\\u001b sur\\udc80"')


def test_logfmt_keys_are_sanitized() -> None:
    c = Captured("logfmt")
    c.log.info("m", extra={"a b": 1, 'q"=': 2, "ok.key-1_x": 3, "é": 4})
    got = c.one()
    assert [(k, got[k]) for k in list(got)[4:]] == [
        ("a_b", "1"), ("q__", "2"), ("ok.key-1_x", "3"), ("_", "4")]


def test_a_line_with_a_raw_quote_or_newline_is_refused_by_the_test_parser() -> None:
    """The parser the tests read logs with refuses what the old formatter wrote."""
    for line in ['ts=1 msg="say "hi""', 'ts=1 msg="a\nb"', "ts=1 msg=a=b", 'ts=1 msg="open',
                 'ts=1 msg="\\x"', "ts=1 ts=2"]:
        with pytest.raises(BadLine):
            parse_logfmt(line)


def test_setup_picks_the_format_logfmt_by_default() -> None:
    root = logging.getLogger()
    before, level = root.handlers[:], root.level
    try:
        logs.setup("info")
        assert isinstance(root.handlers[0].formatter, logs.KeyValueFormatter)
        logs.setup("warning", "json")
        assert isinstance(root.handlers[0].formatter, logs.JsonFormatter)
        assert root.level == logging.WARNING
    finally:
        root.handlers[:] = before
        root.setLevel(level)
