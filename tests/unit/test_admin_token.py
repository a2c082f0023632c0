"""The admin token that `wkhost serve` makes never begins with '-': on a command line,
`--token -x...` reads as an option, so a token that begins with one cannot be passed
after `--token` (issue 36, item 10). A token already in a data directory is kept as
it is, whatever it begins with."""

from __future__ import annotations

import base64
import secrets
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wkhost import HostConfig
from wkhost.net.serve import admin_token

URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
DRAWS = 2000  # a leading '-' is 1 draw in 64: (63/64)**2000 is about 2e-14


def fresh_token(config: HostConfig) -> str:
    path = config.data_dir / "_host" / "admin-token"
    path.unlink(missing_ok=True)
    token, made_at = admin_token(config, None)
    assert made_at == path and path.read_text() == token + "\n"
    return token


def test_no_made_token_begins_with_a_dash(tmp_path: Path) -> None:
    config = HostConfig(data_dir=tmp_path)
    tokens = [fresh_token(config) for _ in range(DRAWS)]
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == DRAWS  # still random
    assert all(len(base64.urlsafe_b64decode(t + "=")) == 32 for t in tokens)  # 256 bits


@given(st.text(alphabet=URLSAFE, min_size=43, max_size=43))
def test_whatever_the_random_source_draws_the_token_begins_with_no_dash(
        drawn: str) -> None:
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as data:
        mp.setattr(secrets, "token_urlsafe", lambda n=None: drawn)
        token = fresh_token(HostConfig(data_dir=Path(data)))
    assert not token.startswith("-")
    assert token[1:] == drawn[1:] and len(token) == len(drawn)
    if not drawn.startswith("-"):
        assert token == drawn  # a draw that was fine is kept


def test_a_token_already_there_is_kept_even_if_it_begins_with_a_dash(tmp_path: Path) -> None:
    path = tmp_path / "_host" / "admin-token"
    path.parent.mkdir()
    path.write_text("-kept-as-it-is-0123456789\n")
    assert admin_token(HostConfig(data_dir=tmp_path), None) == (
        "-kept-as-it-is-0123456789", path)

