"""`wkhost serve` refuses caps under which no answer could be sent (every one a 500)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--max-response-headers", "4", "--max-response-headers takes a number of at least 5"),
    ("--max-response-header-kb", "0", "--max-response-header-kb takes a number of at least 1"),
])
def test_a_cap_no_answer_fits_under_is_a_usage_error(tmp_path: Path, flag: str, value: str,
                                                     says: str) -> None:
    app = tmp_path / "x.wasm"
    app.write_bytes(b"not a component")  # refused before the component is read
    done = subprocess.run([sys.executable, "-m", "wkhost.cli", "serve", "--port", "0",
                           "--data", str(tmp_path / "data"), "--actor", f"x={app}", flag, value],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2 and says in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "data").exists()  # nothing made for a refused start
