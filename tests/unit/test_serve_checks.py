"""host/net/serve.py's checks before any compile, where a real server cannot show them: a
directory refused for a reason this test's user (often root) is never refused for."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from wkhost.errors import HostError
from wkhost.net.preflight import check_writable


@pytest.mark.parametrize("code, says", [
    (errno.EACCES, "permission denied"),
    (errno.EROFS, "read-only file system"),
    (errno.ENOSPC, "no space left on device"),
])
def test_a_directory_that_cannot_be_written_names_the_flag_and_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, says: str) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise OSError(code, os.strerror(code), str(tmp_path / "data"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(HostError) as info:
        check_writable(tmp_path / "data", "--data")
    assert str(info.value) == f"--data {tmp_path / 'data'}: {says}"


def test_a_reason_elsewhere_names_where(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(HostError, match=r"^--data .*/f/data: not a directory"):
        check_writable(tmp_path / "f" / "data", "--data")
    check_writable(tmp_path / "new" / "data", "--data")  # made, written and left empty
    assert list((tmp_path / "new" / "data").iterdir()) == []
