"""Running componentize-py: its command, the SDK staged for it, and its failures explained.

componentize-py runs in a subprocess with `-p <app dir> -p <staged SDK> -p <extra>...`.
Its output, on failure, is a guest traceback wrapped in Rust's error report, with the
-p directories renamed; `run_componentize` turns that into a `BuildError` that names
the user's own file and line.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import wkguest

from ..errors import HostError  # relative: mypy cannot see the editable `wkhost` mapping

WORLD = "actor"
WIT_DIR: Path = wkguest.WIT_DIR
SDK_DIR: Path = Path(wkguest.__file__).parent
BUILD_TIMEOUT_S = 900


class BuildError(HostError):
    """A build failed. `str(e)` is a one-line summary; `details` holds the relevant part
    of componentize-py's output (or of the source), for a human."""

    kind = "BuildError"

    def __init__(self, summary: str, details: str = "") -> None:
        super().__init__(summary)
        self.details = details


def componentize_version() -> str:
    """The installed componentize-py version. Raises BuildError if it is not installed."""
    try:
        return importlib.metadata.version("componentize-py")
    except importlib.metadata.PackageNotFoundError:
        raise BuildError("componentize-py is not installed (pip install componentize-py)") from None


def componentize_command() -> list[str]:
    """The argv prefix that runs componentize-py. Raises BuildError if not installed."""
    # `python -m componentize_py` does not work (no __main__). Calling its entry point from
    # this interpreter keeps the version the same as the one in the cache key.
    if importlib.util.find_spec("componentize_py") is not None:
        entry = "import sys; from componentize_py import script; sys.argv[0] = 'componentize-py'"
        return [sys.executable, "-c", f"{entry}; sys.exit(script())"]
    beside = Path(sys.executable).with_name("componentize-py")
    found = str(beside) if beside.exists() else shutil.which("componentize-py")
    if found is None:
        raise BuildError("componentize-py is not installed (pip install componentize-py)") from None
    return [found]


# Imported by the guest Python's `site` at its start, before the app: found on the path
# in the staged SDK's directory (a sitecustomize of the app's own directory would win).
_NO_BYTECODE = "import sys\n\nsys.dont_write_bytecode = True\n"


def stage_sdk(tmp: Path) -> Path:
    """A copy of the guest SDK under `tmp`, for componentize-py's -p: so that an installed
    SDK does not drag its whole site-packages into the component, and without wit/ (the
    build reads WIT from -d)."""
    dest = tmp / "sdk"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "wit")
    shutil.copytree(SDK_DIR, dest / "wkguest", ignore=ignore)
    (dest / "sitecustomize.py").write_text(_NO_BYTECODE)
    return dest


def run_componentize(app: Path, paths: Sequence[Path], out: Path, cwd: Path) -> None:
    """Build `app` into `out` with the modules of `paths`. Raises BuildError, explained."""
    cmd = [*componentize_command(), "-d", str(WIT_DIR), "-w", WORLD, "componentize", app.stem]
    for p in paths:
        cmd += ["-p", str(p)]
    cmd += ["-o", str(out)]
    env = {**os.environ, "RUST_BACKTRACE": "0", "RUST_LIB_BACKTRACE": "0"}
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise BuildError(f"componentize-py took more than {BUILD_TIMEOUT_S} s") from None
    if proc.returncode != 0 or not out.is_file():
        raise _explain(app, _unmangle(proc.stdout + proc.stderr, paths))


def _unmangle(output: str, paths: Sequence[Path]) -> str:
    """componentize-py mounts the i-th -p directory at /i in the guest: map back."""

    def real(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return f"{paths[i]}/" if i < len(paths) else m.group(0)

    return re.sub(r'(?<=")/(\d+)/', real, output)


def _relevant(output: str) -> str:
    """The guest's traceback from componentize-py's output, without its Rust noise."""
    m = re.search(r"AssertionError: ?(.*?)\n\s*\nCaused by:", output, re.S)
    text = m.group(1) if m else output
    text = text.split("Stack backtrace:")[0]
    return "\n".join(text.strip("\n").splitlines()[-40:])


_SYNTAX = r'File "([^"]+)", line (\d+)\n(?:.*\n)*?\s*(\w*Error): (.*)'


def _explain(app: Path, output: str) -> BuildError:
    details = _relevant(output)
    if m := re.search(r"ModuleNotFoundError: No module named '([^']+)'", output):
        return BuildError(
            f"{app.name}: module '{m.group(1)}' not found at build time; if it is your own "
            "code, add its directory with --path DIR",
            details,
        )
    if re.search(r"module '[^']+' has no attribute 'Handler'", output):
        return BuildError(
            f"{app.name} does not define Handler: add `Handler = export(YourActor)` "
            "at module level",
            details,
        )
    if "SyntaxError" in output and (m := re.search(_SYNTAX, details)):
        return BuildError(f"syntax error at {m.group(1)}:{m.group(2)}: {m.group(4)}", details)
    last = details.strip().splitlines()[-1] if details.strip() else "no output"
    return BuildError(f"componentize-py failed for {app.name}: {last}", details)
