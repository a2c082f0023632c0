"""Peers measured beside wkhost, each from its own bench-only install (see install.sh).

Each peer is a script run by the peers' own interpreter (.cache/peers-venv/bin/python),
never imported into the product's: it prints one JSON document of figures on the last
line of its stdout. `run_peers` finds what is installed and runs it; a peer that is not
installed is reported with a one-line reason and skipped.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO, summary

HERE = Path(__file__).resolve().parent
VENV_PY = REPO / ".cache" / "peers-venv" / "bin" / "python"
RESTATE_SERVER = (REPO / ".cache" / "peers-npm" / "node_modules" / "@restatedev"
                  / "restate-server-linux-x64" / "bin" / "restate-server")
TIMEOUT_S = 900


def _has_module(module: str) -> bool:
    if not VENV_PY.is_file():
        return False
    probe = subprocess.run([str(VENV_PY), "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


def available() -> dict[str, str | None]:
    """Each peer: None if it can run, else why it is skipped."""
    hint = "run `make bench-peers`"
    if not VENV_PY.is_file():
        missing = f"no peers venv at {VENV_PY.relative_to(REPO)}: {hint}"
        return {"dbos": missing, "restate": missing}
    out: dict[str, str | None] = {}
    out["dbos"] = None if _has_module("dbos") else f"PyPI dbos is not installed: {hint}"
    if not _has_module("restate"):
        out["restate"] = f"PyPI restate-sdk is not installed: {hint}"
    elif not RESTATE_SERVER.is_file():
        out["restate"] = f"npm @restatedev/restate-server is not installed: {hint}"
    else:
        out["restate"] = None
    return out


def run_peer(name: str, repeats: int, workflows: int, levels: str) -> dict[str, Any]:
    cmd = [str(VENV_PY), str(HERE / f"{name}_peer.py"), "--repeats", str(repeats),
           "--workflows", str(workflows), "--levels", levels]
    if name == "restate":
        cmd += ["--server", str(RESTATE_SERVER)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{name} exited {proc.returncode}: {' | '.join(tail)}")
    doc: dict[str, Any] = json.loads(lines[-1])
    return doc


def run_peers(repeats: int, workflows: int, levels: str = "1,8,32",
              say: Any = print) -> dict[str, Any]:
    """{peer: figures} for each peer that ran, {peer: {"skipped": why}} for the others."""
    out: dict[str, Any] = {}
    for name, why in available().items():
        if why is not None:
            say(f"  [peers] {name}: skipped: {why}")
            out[name] = {"skipped": why}
            continue
        say(f"  [peers] {name} ...")
        try:
            out[name] = run_peer(name, repeats, workflows, levels)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            say(f"  [peers] {name}: failed: {e}")
            out[name] = {"skipped": f"failed: {e}"}
    return out


def merge(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two runs of one peer's figures as one: each figure's runs pooled (its median, min
    and max then over both), failures summed, other numbers averaged, text kept from the
    first. A run that was skipped (or failed) gives way to the other."""
    if "skipped" in first or "skipped" in second:
        return second if "skipped" in first else first
    out: dict[str, Any] = {}
    for key in first.keys() | second.keys():
        a, b = first.get(key), second.get(key)
        if a is None or b is None:
            out[key] = a if b is None else b
        elif isinstance(a, dict) and isinstance(b, dict) and "runs" in a and "runs" in b:
            runs = [*a["runs"], *b["runs"]]
            out[key] = {**summary(runs), "runs": runs}
        elif isinstance(a, dict) and isinstance(b, dict):
            out[key] = merge(a, b)
        elif key == "failures":
            out[key] = a + b
        elif isinstance(a, int | float) and isinstance(b, int | float):
            out[key] = (a + b) / 2
        else:
            out[key] = a
    return out


def each_available(tag: str, run: Callable[[str], dict[str, Any]],
                   failures: tuple[type[BaseException], ...] = (RuntimeError,)
                   ) -> dict[str, Any]:
    """`run(name)` for each peer that can run; one that cannot, or whose run fails with
    one of `failures`, is `{"skipped": why}`, said in one line headed `[tag]`."""
    out: dict[str, Any] = {}
    for name, why in available().items():
        if why is not None:
            print(f"  [{tag}] {name}: skipped: {why}", flush=True)
            out[name] = {"skipped": why}
            continue
        print(f"  [{tag}] {name} ...", flush=True)
        try:
            out[name] = run(name)
        except failures as e:
            print(f"  [{tag}] {name}: failed: {e}", flush=True)
            out[name] = {"skipped": f"failed: {e}"}
    return out
