"""`wkhost audit`'s own parts (host/cli/audit.py): TIME as it is given, and a line as it
is printed. Through a real server: tests/e2e/test_audit.py."""

from __future__ import annotations

import pytest
from wkhost.cli.audit import line, parse_time
from wkhost.cli.options import CliError

AT = 1_764_633_000_000  # 2025-12-01 23:50:00Z


@pytest.mark.parametrize("text", ["2025-12-01T23:50:00Z", "2025-12-01T23:50:00+00:00",
                                  "2025-12-01 23:50:00", "2025-12-01T23:50",
                                  "2025-12-01 23:50", str(AT)])
def test_a_time_in_utc_or_in_ms(text: str) -> None:
    assert parse_time(text, "--since") == AT


def test_a_date_is_its_midnight_and_a_span_counts_back_on_the_server() -> None:
    assert parse_time("2025-12-01", "--since") == AT - (23 * 60 + 50) * 60_000
    assert [parse_time(s, "--since") for s in ("90s", "15m", "2h", "7d")] == [
        -90_000, -900_000, -7_200_000, -604_800_000]


def test_a_span_is_any_duration_the_sdk_takes() -> None:
    assert [parse_time(s, "--since") for s in ("1.5h", "3 days", "2 Hours", "500ms")] == [
        -5_400_000, -259_200_000, -7_200_000, -500]


@pytest.mark.parametrize("text", ["yesterday", "2h ago", "-5", "2025-13-01", "1h30m",
                                  "10 parsecs", "2025-12-01T25:00Z"])
def test_anything_else_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(CliError, match=r"^--until: .* is not a time"):
        parse_time(text, "--until")


def test_a_line_names_when_what_and_the_answer_and_a_note_if_any() -> None:
    e = {"at": AT + 5, "action": "terminate", "target": "orders/o1", "status": 200,
         "state": "terminated", "result": "ok", "note": None, "who": "ann"}
    assert line(e).split() == ["2025-12-01", "23:50:00.005Z", "ann", "terminate",
                               "orders/o1", "200", "terminated", "ok"]
    e |= {"target": "", "state": None, "note": "bulk terminate (3 instances)", "who": None}
    assert line(e).split()[2:7] == ["-", "terminate", "(host)", "200", "-"]  # no name kept
    assert line(e).endswith("  [bulk terminate (3 instances)]")
