"""The kinds the http interface's `last-error` answers (host/interfaces/http.py) are the
WIT's `fetch-error-kind`: each kind host/fetch/ gives a FetchError, and the narrowed
deadline's. (Which event reads which failure: tests/host/test_error_kinds.py, on a real
component.)"""

from __future__ import annotations

from typing import get_args

from wkhost.fetch.errors import ErrorKind
from wkhost.interfaces.http import NARROWED_DEADLINE

from .test_wit_error_kinds import cases


def test_the_kinds_noted_are_fetch_error_kinds() -> None:
    noted = {*get_args(ErrorKind), NARROWED_DEADLINE}
    assert sorted(cases("fetch-error-kind")) == sorted(noted)
