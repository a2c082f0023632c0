"""Crash points are inert unless named at start, and kill exactly at the named hit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from wkhost.testing import crashpoints


def test_tags_are_read_from_a_leading_comment_only() -> None:
    assert crashpoints.sql_tag("/*wk:result*/ INSERT INTO t VALUES (1)") == "wk:result"
    assert crashpoints.sql_tag("INSERT /*wk:result*/ INTO t") is None
    assert crashpoints.sql_tag("/* unterminated") is None


def test_nothing_is_armed_without_the_switch() -> None:
    assert crashpoints.ARMED is False
    crashpoints.hit("sql-after:wk:result")  # returns: nothing armed


def run_points(env_point: str, skip: str, hits: list[str], **more: str) -> int:
    code = ("from wkhost.testing import crashpoints\n"
            f"for p in {hits!r}:\n    crashpoints.hit(p)\n")
    env = {"WKHOST_CRASH_AT": env_point, "WKHOST_CRASH_SKIP": skip, "PATH": "/usr/bin:/bin",
           **more}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode


def test_an_armed_point_kills_the_process_with_sigkill_at_its_hit() -> None:
    assert run_points("call:orders", "0", ["call:ledger", "call:orders"]) == -9
    assert run_points("call:orders", "1", ["call:orders"]) == 0
    assert run_points("call:orders", "1", ["call:orders", "call:orders"]) == -9


def test_a_listing_run_names_each_point_reached_in_order(tmp_path: Path) -> None:
    listed = tmp_path / "points"
    hits = ["sql-before:wk:result", "sql-after:wk:result", "call:ledger", "sql-after:wk:result"]
    assert run_points("", "0", hits, WKHOST_CRASH_LIST=str(listed)) == 0
    assert listed.read_text().splitlines() == hits
    # Listing does not disarm a kill: the point named is listed, then kills.
    listed.unlink()
    assert run_points("call:ledger", "0", hits, WKHOST_CRASH_LIST=str(listed)) == -9
    assert listed.read_text().splitlines() == hits[:3]
