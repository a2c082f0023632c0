"""The log of a real `wkhost serve`, in each --log-format, one process and several: every
line of it parses (logfmt with a strict parser, JSON), and a trap's line carries the
class, the id (one full of quotes, an '=', a backslash, a newline), the event's kind and
the reason as fields of their own, as do the guest's traceback lines and the alarm's
retry, so that an operator can pick an actor's lines out by field."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ..log_parsing import parse_json, parse_logfmt
from .conftest import MakeServer
from .server import Server

PARSERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "logfmt": parse_logfmt, "json": parse_json}
HOSTILE_ID = 'say "hi"=\\ 二\nnext'
ALARM_ID = 'alarm-trap "x"'
BOUND_S = 30.0


def parsed_log(server: Server, fmt: str) -> list[dict[str, Any]]:
    """Every line of the server's log, parsed (a line that does not parse fails here)."""
    return [PARSERS[fmt](line) for line in server.log]


def wait_for_line(server: Server, fmt: str, pred: Callable[[dict[str, Any]], bool]) -> None:
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end:
        if any(pred(d) for d in parsed_log(server, fmt)):
            return
        time.sleep(0.05)
    pytest.fail(f"no such line in {BOUND_S} s: {server.log[-10:]}", pytrace=False)


def of(cls: str, actor_id: str, event: str) -> Callable[[dict[str, Any]], bool]:
    return lambda d: (d.get("class"), d.get("id"), d.get("event")) == (cls, actor_id, event)


@pytest.mark.parametrize("fmt, processes", [("logfmt", 1), ("json", 1), ("json", 2),
                                            ("logfmt", 2)])
def test_every_line_parses_and_a_trap_carries_its_fields(
        make_server: MakeServer, fmt: str, processes: int) -> None:
    server = make_server(extra=["--log-format", fmt, "--processes", str(processes)])
    status, _ = server.actor("probe", HOSTILE_ID, "POST", "/trap")
    assert status >= 500, status
    now = server.advance(0)
    assert server.actor("probe", ALARM_ID, "POST", "/alarm/set", query=f"at={now}")[0] == 200
    server.advance(1)
    trapped = of("probe", ALARM_ID, "alarm")
    wait_for_line(server, fmt, lambda d: trapped(d) and "retry_ms" in d)
    assert server.stop() == 0

    lines = parsed_log(server, fmt)
    assert lines and all(list(d)[:4] == ["ts", "level", "logger", "msg"] for d in lines)
    traps = [d for d in lines if of("probe", HOSTILE_ID, "request")(d) and "reason" in d]
    assert len(traps) == 1, traps
    trap = traps[0]
    assert (trap["level"], trap["logger"]) == ("warning", "wkhost")
    # The reason is the exception the guest raised, not wasm's `unreachable`.
    assert trap["reason"] == "the guest raised RuntimeError: probe: trap requested", trap
    assert trap["msg"] == f"probe/{HOSTILE_ID}: its request event trapped: {trap['reason']}"
    # The guest's own traceback is one record, with the actor's fields, and the lines
    # componentize-py's runtime writes as it traps (its panic) are not logged.
    told = [d for d in lines if d["logger"] == "wkhost.guest.probe"
            and of("probe", HOSTILE_ID, "request")(d)]
    assert len(told) == 1 and told[0]["level"] == "warning", told
    tb = told[0]["msg"].split("] ", 1)[1].splitlines()
    assert tb[0] == "Traceback (most recent call last):", tb
    assert tb[-1] == "RuntimeError: probe: trap requested", tb
    assert any(line.endswith(", in trap") for line in tb), tb
    # The alarm's trap, and its retry with the trap's reason and the delay.
    alarm = [d for d in lines if trapped(d)]
    kept = [d for d in alarm if "reason" in d
            and d["msg"].endswith(f"its alarm event trapped: {d['reason']}")]
    retry = [d for d in alarm if "retry_ms" in d]
    assert kept and retry, alarm
    assert retry[0]["reason"] == kept[0]["reason"]
    assert int(retry[0]["retry_ms"]) > 0
