"""`wkhost serve` refuses bad input at start with one clear line and exit code 1 or 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wkhost.cli", "serve", "--data",
                           str(tmp_path / "data"), "--port", "0", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, code, message", [
    (["--actor", "x=missing.wasm"], 1, "no component at missing.wasm"),
    (["--actor", "X=any.wasm"], 2, "--actor X=any.wasm: bad class name 'X'"),
    (["--actor", "x"], 2, "--actor takes NAME=VALUE"),
    (["--actor", "x=a.wasm", "--access", "y=internal"], 2,
     "--access y=internal: no class y is served"),
    (["--actor", "x=a.wasm", "--access", "x=secret"], 2,
     "--access x=secret: class x's access is internal or public, not 'secret'"),
    (["--actor", "x=a.wasm", "--reuse-instances", "y"], 2,
     "--reuse-instances y: no class y is served"),
    (["--actor", "x=a.wasm", "--allow-http", "http://x/"], 2, "--allow-http"),
])
def test_bad_arguments_get_one_clear_line(tmp_path: Path, args: list[str], code: int,
                                          message: str) -> None:
    done = serve(tmp_path, *args)
    assert done.returncode == code, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_file_that_is_not_a_component_is_refused_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wasm"
    bad.write_text("not wasm\n")
    done = serve(tmp_path, "--actor", f"x={bad}")
    assert done.returncode == 1
    assert f"{bad} is not a component, nor any WebAssembly (it starts with b'not wasm" \
        in done.stderr
    assert "Traceback" not in done.stderr
