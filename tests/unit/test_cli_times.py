"""One grammar for every TIME the CLI takes (host/cli/text.py's parse_time): each --since
and --until of `wkhost actors`, `workflow list` and `audit` reads ms, ISO 8601 with or
without a zone, and a span back (30s, 15m, 2h, 7d) that the server counts back from its
own clock; anything else is bad usage, one line naming the option, before any request.
The listing flags of `workflow list` (--label, --order, --after, --limit, --count) come to
the same query as `wkhost actors`' (no server: the page fetcher is the test's)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from wkhost.cli import listing
from wkhost.cli.actors import filter_params, start_labels
from wkhost.cli.main import main, make_parser
from wkhost.cli.options import CliError
from wkhost.cli.text import parse_time

AT = 1_764_633_000_000  # 2025-12-01 23:50:00Z
NOWHERE = ["--server", "http://127.0.0.1:9", "--token", "t"]  # never reached here


@pytest.mark.parametrize("text, ms", [
    (str(AT), AT), ("2025-12-01T23:50:00Z", AT), ("2025-12-01T23:50:00+00:00", AT),
    ("2025-12-02T01:50:00+02:00", AT), ("2025-12-01T18:50-05:00", AT),
    ("2025-12-01 23:50", AT), ("2025-12-01T23:50:00.123Z", AT + 123),
    ("2025-12-01", AT - (23 * 60 + 50) * 60_000),
    ("30s", -30_000), ("15m", -900_000), ("2h", -7_200_000), ("7d", -604_800_000),
    ("3 days", -259_200_000), ("500ms", -500),
])
def test_a_time_is_ms_iso_with_or_without_a_zone_or_a_span_back(text: str, ms: int) -> None:
    assert parse_time(text, "--since") == ms


@pytest.mark.parametrize("text", ["yesterday", "2h ago", "-5", "2025-13-01", "1h30m",
                                  "10 parsecs", "2025-12-01T25:00Z", "", "0s"])
def test_anything_else_is_bad_usage_naming_the_option(text: str) -> None:
    with pytest.raises(CliError, match=r"^--until: ") as e:
        parse_time(text, "--until")
    assert e.value.code == 2


@pytest.mark.parametrize("command", [
    ["actors", "orders"], ["workflow", "list", "orders"], ["audit"]], ids=" ".join)
@pytest.mark.parametrize("option", ["--since", "--until"])
def test_every_since_and_until_refuse_a_bad_time_in_one_line(
        capsys: pytest.CaptureFixture[str], command: list[str], option: str) -> None:
    assert main([*command, option, "last tuesday", *NOWHERE]) == 2
    err = capsys.readouterr().err
    assert err == (f"wkhost: error: {option}: 'last tuesday' is not a time: give "
                   "2026-12-01T23:50:00Z, ms since the epoch, or a span back such as 2h\n")


def test_a_bad_label_and_a_bad_limit_are_bad_usage_too(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workflow", "list", "orders", "--label", "nolabel", *NOWHERE]) == 2
    assert capsys.readouterr().err == "wkhost: error: --label: 'nolabel' is not K=V\n"
    assert main(["workflow", "list", "orders", "--limit", "0", *NOWHERE]) == 2
    assert "--limit takes 1 or more" in capsys.readouterr().err
    assert main(["workflow", "start", "orders", "o1", "--label", "k=" + "v" * 257,
                 *NOWHERE]) == 2
    assert "--label: label 'k': a value has at most 256 bytes" in capsys.readouterr().err
    assert start_labels(["region=eu", "note=a=b", "empty="]) == {
        "region": "eu", "note": "a=b", "empty": ""}


def parsed(*argv: str) -> argparse.Namespace:
    return make_parser("workflow").parse_args(["workflow", "list", "orders", *argv])


def test_workflow_list_asks_the_listing_what_actors_asks(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    args = parsed("--since", "2h", "--label", "region=eu", "--label", "tier=gold",
                  "--order", "newest", "--limit", "3", "--status", "waiting")
    assert filter_params(args) == {"since": -7_200_000, "until": None, "order": "-updated",
                                   "label": ["region=eu", "tier=gold"], "after": ""}
    asked: list[dict[str, Any]] = []
    pages = iter([{"actors": [_row("o1", 5), _row("o2", 4)], "next": "4/o2"},
                  {"actors": [_row("o3", 3)], "next": "3/o3"}])

    def page(server: str, token: str, cls: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return next(pages)

    monkeypatch.setattr(listing, "fetch_page", page)
    assert listing.run(_Admin(), args) == 0
    assert [(p["status"], p["label"], p["order"], p["since"], p["after"], p["limit"])
            for p in asked] == [
        ("waiting", ["region=eu", "tier=gold"], "-updated", -7_200_000, "", 3),
        ("waiting", ["region=eu", "tier=gold"], "-updated", -7_200_000, "4/o2", 1)]
    out = capsys.readouterr()
    assert [line.split("\t")[0::3] for line in out.out.splitlines()] == [
        ["o1", "region=eu tier=gold"], ["o2", "region=eu tier=gold"],
        ["o3", "region=eu tier=gold"]]
    assert out.err == "wkhost: --limit 3 reached; more may follow: --after 3/o3\n"


def test_workflow_list_count_asks_one_page_of_one(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []

    def page(server: str, token: str, cls: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"actors": [], "next": None, "count": 42}

    monkeypatch.setattr(listing, "fetch_page", page)
    assert listing.run(_Admin(), parsed("--label", "region=eu", "--count")) == 0
    assert capsys.readouterr().out == "42\n"
    assert [(p["limit"], p["count"], p["label"]) for p in asked] == [(1, 1, ["region=eu"])]


class _Admin:
    base_url, token = "http://127.0.0.1:9", "t"


def _row(actor_id: str, ms: int) -> dict[str, Any]:
    return {"id": actor_id, "status": "waiting", "updated_ms": ms,
            "labels": {"tier": "gold", "region": "eu"}}
