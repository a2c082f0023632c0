"""The CLI's lengths of time (host/cli/text.py seconds_arg): `--timeout` and `--grace`
take seconds, as they always did, or a duration as the guest SDK reads it."""

from __future__ import annotations

import argparse

import pytest
from wkhost.cli.text import seconds_arg


@pytest.mark.parametrize(("text", "seconds"), [
    ("60", 60.0), ("1.5", 1.5), ("0", 0.0), ("90s", 90.0), ("5m", 300.0),
    ("5 minutes", 300.0), ("2h", 7200.0), ("1 day", 86_400.0), ("250ms", 0.25),
])
def test_seconds_or_a_duration(text: str, seconds: float) -> None:
    assert seconds_arg(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10 parsecs", "1h30m", "-5m", "5 m s"])
def test_anything_else_is_refused_with_examples(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not a length of time: give "
                       r"seconds \(60\) or one number and one unit"):
        seconds_arg(text)


def test_the_options_take_them(capsys: pytest.CaptureFixture[str]) -> None:
    from wkhost.cli.main import make_parser

    parser = make_parser()
    args = parser.parse_args(["workflow", "status", "orders", "o1", "--wait",
                              "--timeout", "2 minutes"])
    assert args.timeout == 120.0
    args = parser.parse_args(["schedule", "create", "nightly", "orders", "0 3 * * *",
                              "--grace", "5m"])
    assert args.grace == 300.0
    with pytest.raises(SystemExit):
        parser.parse_args(["workflow", "status", "orders", "o1", "--timeout", "soon"])
    assert "--timeout: 'soon' is not a length of time" in capsys.readouterr().err
