"""`wkhost serve --fetch-via` (host/fetch/via.py): the test kit's sandbox sends every
fetch to its own server. Only a loopback http URL, and only with --fake-clock."""

from __future__ import annotations

import pytest
from wkhost.cli.main import main
from wkhost.fetch.via import check_via


@pytest.mark.parametrize("url", ["http://127.0.0.1:8123", "http://localhost:8123/x"])
def test_a_loopback_url_with_a_port_is_taken(url: str) -> None:
    assert check_via(url) == "http://127.0.0.1:8123"


@pytest.mark.parametrize("url", ["https://127.0.0.1:8123", "http://10.0.0.1:80",
                                 "http://127.0.0.1", "127.0.0.1:8123", "http://example.com:80"])
def test_anything_else_is_refused_naming_the_flag(url: str) -> None:
    with pytest.raises(ValueError, match="--fetch-via"):
        check_via(url)


def test_without_the_fake_clock_the_flag_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "--actor", "a=/nonexistent.wasm", "--fetch-via",
                 "http://127.0.0.1:9"])
    assert code == 2
    assert "--fetch-via is for tests: give --fake-clock with it" in capsys.readouterr().err
