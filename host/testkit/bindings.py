"""The WIT bindings on plain CPython: componentize-py's own, with their imports answered
here.

`componentize-py bindings` writes, from the same WIT a build reads, the modules an app's
`wkguest` imports (`wit_world`, `componentize_py_types`): plain dataclasses and enums,
every import function a body that raises NotImplementedError. `install()` writes them
once per WIT (into a cache directory), imports them, and replaces each import function
with one that forwards to the instance whose event runs now (`Guest`, imports.py). So a
user's app runs unmodified, on the very types it gets in a component; a WIT function this
kit does not answer fails naming itself.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..engine.componentize import WIT_DIR, WORLD, componentize_command

INTERFACES = ("actors", "alarm", "attributes", "http", "lifecycle", "log", "metrics",
              "overlap", "sqlite", "trace", "types")
_lock = threading.Lock()
_installed: dict[str, ModuleType] = {}


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wkhost" / "testkit"


def _wit_hash() -> str:
    h = hashlib.sha256()
    for f in sorted(WIT_DIR.glob("*.wit")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def _generate(dest: Path) -> None:
    """componentize-py's bindings for the actor world, into `dest` (made whole, then
    renamed into place, so a concurrent test process never sees half of them)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bindings-", dir=dest.parent))
    cmd = [*componentize_command(), "-d", str(WIT_DIR), "-w", WORLD, "bindings", str(work)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"componentize-py bindings failed: {done.stderr.strip()}")
    try:
        work.rename(dest)
    except OSError:  # another process got there first: theirs is the same
        subprocess.run(["rm", "-rf", str(work)], check=False)


def bindings_dir() -> Path:
    """Where this WIT's generated bindings are (written on first use)."""
    dest = _cache_root() / f"bindings-{_wit_hash()}"
    if not (dest / "wit_world").is_dir():
        try:
            _generate(dest)
        except OSError:  # no writable home: a directory of this process's own
            dest = Path(tempfile.mkdtemp(prefix="wkhost-testkit-")) / "bindings"
            _generate(dest)
    return dest


def install(answer: Callable[[str, str], Callable[..., Any]]) -> dict[str, ModuleType]:
    """Import the bindings and answer each import function with `answer(interface,
    function)`. Idempotent: the second call only returns the modules. Raises
    RuntimeError if another `wit_world` (not the kit's) is already imported."""
    with _lock:
        if _installed:
            return _installed
        if "wit_world" in sys.modules:
            raise RuntimeError("a wit_world module is already imported: the test kit "
                               "cannot put its own in place")
        path = str(bindings_dir())
        sys.path.insert(0, path)
        try:
            import importlib

            mods = {name: importlib.import_module(f"wit_world.imports.{name}")
                    for name in INTERFACES}
        finally:
            sys.path.remove(path)  # imported now: nothing else should resolve from there
        for name, mod in mods.items():
            for fn in _functions(mod):
                setattr(mod, fn, answer(name, fn))
        _installed.update(mods)
        return _installed


def _functions(mod: ModuleType) -> list[str]:
    """The import functions a generated module defines (not its types)."""
    return [n for n, v in vars(mod).items()
            if callable(v) and not isinstance(v, type) and not n.startswith("_")
            and getattr(v, "__module__", None) == mod.__name__]
