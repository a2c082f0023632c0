"""`wkhost build`: host/engine/build.py's command, under the CLI's exit-code contract."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..engine.build import add_build_command, run_build
from .options import CliError, with_exit_codes


def add_build(sub: Any) -> None:
    b = add_build_command(sub)
    # build.py's epilog ends with a one-line exit status: the contract's rows replace it.
    b.epilog = (b.epilog or "").split("\n\nexit status:")[0] or None
    with_exit_codes(b, "build")
    b.set_defaults(run=_run_build)


def _run_build(args: argparse.Namespace) -> int:
    """`wkhost build`, with an APP that cannot be read refused as bad usage (2), as any
    command's unreadable input file is: build.py alone would call it a failed build."""
    if Path(args.app).suffix == ".py":
        try:
            Path(args.app).open("rb").close()
        except OSError as e:
            raise CliError(f"cannot read {args.app}: {e.strerror}") from None
    return run_build(args)
