"""Options shared by the commands that talk to a running server (call, actors,
workflow): where it is, and the operator's token. Its own module, so that the commands'
modules import it rather than each other."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_SERVER = "http://127.0.0.1:8080"


def add_server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", default=os.environ.get("WKHOST_SERVER", DEFAULT_SERVER),
                   help="the server's URL (default $WKHOST_SERVER or %(default)s)")
    p.add_argument("--data", type=Path, default=Path("wkdata"),
                   help="the server's data directory, to read its admin token (default ./wkdata)")
    p.add_argument("--token", default=os.environ.get("WKHOST_TOKEN"),
                   help="the admin token (default $WKHOST_TOKEN, else read from --data)")


def operator_token(args: argparse.Namespace) -> str:
    token: str | None = args.token
    if token:
        return token
    path = Path(args.data) / "_host" / "admin-token"
    try:
        return path.read_text().strip()
    except OSError:
        raise SystemExit(f"wkhost: error: no admin token: pass --token, set WKHOST_TOKEN, "
                         f"or point --data at the server's data directory ({path} not found)"
                         ) from None
