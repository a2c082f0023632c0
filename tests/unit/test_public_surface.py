"""The package's public surface: `from wkhost import ...` for everything in `__all__`, and
importing the package alone does not load the engine."""

from __future__ import annotations

import subprocess
import sys

import pytest
import wkhost


@pytest.mark.parametrize("name", wkhost.__all__)
def test_every_public_name_is_there(name: str) -> None:
    assert getattr(wkhost, name).__name__ == name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Hots'"):
        _ = wkhost.Hots  # type: ignore[attr-defined]


def test_importing_the_package_loads_neither_wasmtime_nor_sqlite() -> None:
    code = ("import sys, wkhost, wkhost.errors\n"
            "print(sorted({'wasmtime', 'apsw'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
