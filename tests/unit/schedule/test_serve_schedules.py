"""`wkhost serve --schedules [NAME]`: the flag, and its refusals before anything is
built (the e2e tests serve it: tests/e2e/test_schedules.py)."""

from __future__ import annotations

import pytest
from wkhost.cli.main import make_parser
from wkhost.cli.serve import run_serve


def serve_args(*args: str) -> list[str]:
    return ["serve", "--actor", "jobs=jobs.wasm", *args]


@pytest.mark.parametrize(("args", "name"), [((), None), (("--schedules",), "schedules"),
                                            (("--schedules", "crons"), "crons")])
def test_the_flag_names_the_class(args: tuple[str, ...], name: str | None) -> None:
    assert make_parser().parse_args(serve_args(*args)).schedules == name


@pytest.mark.parametrize(("args", "message"), [
    (("--schedules", "Bad"), "--schedules Bad: bad class name 'Bad'"),
    (("--schedules", "jobs"), "--schedules jobs: --actor jobs=... serves another class"),
    (("--schedules", "--access", "schedules=public"),
     "the schedule class is internal (only actors and operators may call it), not "
     "--access schedules=public"),
])
def test_a_conflict_is_bad_usage_naming_the_flag(args: tuple[str, ...], message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert run_serve(make_parser().parse_args(serve_args(*args))) == 2
    assert message in capsys.readouterr().err
