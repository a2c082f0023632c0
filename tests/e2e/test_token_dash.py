"""An admin token that begins with '-' works through the real `wkhost` command line
(issue 36, item 10): `--token -x...` (an older data directory's token: 1 in 64 of them
began with '-') and `--token=-x...`, which takes any value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MakeServer
from .server import REPO, Server

DASHED = "-dash-first-token_0123456789abcdefABCDEF-x"  # as token_urlsafe(32) could make


@pytest.fixture
def dashed(make_server: MakeServer, tmp_path: Path) -> Server:
    """A server whose data directory already holds a token that begins with '-'."""
    token_file = tmp_path / "data" / "_host" / "admin-token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text(DASHED + "\n")
    server = make_server()
    assert server.token == DASHED
    return server


def wkhost(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wkhost.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO)


@pytest.mark.parametrize("token_args", [["--token", DASHED], [f"--token={DASHED}"]],
                         ids=["space", "equals"])
def test_a_token_that_begins_with_a_dash_is_taken(dashed: Server, tmp_path: Path,
                                                  token_args: list[str]) -> None:
    # --data points nowhere: the token can come only from --token.
    s = ["--server", dashed.url, "--data", str(tmp_path / "nowhere")]
    out = wkhost("call", "probe/p1", "/whoami", *s, *token_args)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["sender"] == "operator"
    out = wkhost("actors", "probe", *token_args, *s, "--json")
    assert out.returncode == 0, out.stderr


def test_a_wrong_token_that_begins_with_a_dash_is_still_refused(dashed: Server,
                                                                tmp_path: Path) -> None:
    out = wkhost("call", "probe/p1", "/whoami", "--server", dashed.url, "--data",
                 str(tmp_path / "nowhere"), "--token", "-not" + DASHED[4:])
    assert out.returncode == 1 and "not this host's admin token" in out.stdout, out


def test_a_token_option_with_no_value_is_still_bad_usage(dashed: Server) -> None:
    out = wkhost("call", "probe/p1", "/whoami", "--server", dashed.url, "--token")
    assert out.returncode == 2 and "--token: expected one argument" in out.stderr
    out = wkhost("call", "probe/p1", "/whoami", "--token", "--server", dashed.url)
    assert out.returncode == 2 and "--token: expected one argument" in out.stderr


def test_help_says_token_equals_value_takes_any_value() -> None:
    out = wkhost("call", "--help")
    assert out.returncode == 0
    assert "--token=VALUE" in " ".join(out.stdout.split())
