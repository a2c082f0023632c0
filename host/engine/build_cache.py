"""The build cache: its key, its entries, their lock, and dropping old ones.

The key hashes the inputs of a build, never its output (builds are not
byte-reproducible): the files the app imports from its directory and the extra paths,
followed from its source (host/engine/guest_sources.py; a neighbouring guest's files are
not among them), the whole guest SDK, the WIT files, the app's module name, the
protocols it declares and the componentize-py version.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from .componentize import SDK_DIR, WIT_DIR, componentize_version
from .guest_sources import Sources, app_sources

_SKIP_DIRS = {"__pycache__", "node_modules"}


def cache_key(app: Path, extra_paths: Sequence[Path] = (),
              sources: Sources | None = None) -> str:
    """sha256 (hex) over everything that goes into a build of `app` (see the module's
    doc); `sources`: `app_sources(app, extra_paths)`, if already found. Raises OSError if
    a file cannot be read, BuildError if componentize-py is not installed."""
    app = Path(app).resolve()
    src = sources or app_sources(app, extra_paths)
    h = hashlib.sha256(f"wkhost-build-2\0{componentize_version()}\0{app.stem}".encode())
    h.update(f"\0protocols {' '.join(sorted(src.protocols))}\0".encode())
    _hash_modules(h, src)
    if src.whole:  # an import the walk could not follow: every file may be read
        for label, root in src.roots:
            if label != "sdk":
                _hash_tree(h, label, root, ".py")
    _hash_tree(h, "sdk", SDK_DIR, "")  # every file: the SDK is ours, small, and shipped
    _hash_tree(h, "wit", WIT_DIR, ".wit")
    return h.hexdigest()


def _files(root: Path, suffix: str) -> Iterator[Path]:
    """Files under `root` ending in `suffix`, sorted, skipping caches and hidden dirs."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and d[0] != ".")
        for name in sorted(filenames):
            if name.endswith(suffix) and not name.endswith(".pyc"):
                yield Path(dirpath, name)


def _hash_tree(h: hashlib._Hash, label: str, root: Path, suffix: str) -> None:
    h.update(f"\0tree {label}\0".encode())
    for f in _files(root, suffix):
        data = f.read_bytes()
        h.update(f"{f.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)


def _hash_modules(h: hashlib._Hash, src: Sources) -> None:
    """Each module name looked for, with where it was found (or not), and each file."""
    roots = dict(src.roots)
    for name, found in sorted(src.modules.items()):
        where = "absent" if found is None else "sdk" if found.sdk else " ".join(
            f"{label}:{path.relative_to(roots[label]).as_posix()}"
            for label, path in ([found.file] if found.file else list(found.search)))
        h.update(f"\0module {name} {where}".encode())
    for label, path in src.files:
        data = path.read_bytes()
        h.update(f"\0file {label}:{path.relative_to(roots[label]).as_posix()}\0"
                 f"{len(data)}\0".encode())
        h.update(data)


def app_label(app: Path) -> str:
    """What the cache calls an app's builds: examples/x/app.py is x, lib/y.py is y."""
    return app.parent.name if app.stem == "app" else app.stem


def cache_entry(cache_dir: Path, app: Path, key: str) -> Path:
    """Where the build of `app` under `key` is kept in `cache_dir` (made if missing)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    return cache_dir / f"{app_label(app)}-{key[:32]}.wasm"


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    # flock is per open file description: it excludes other processes and other threads.
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def prune(cache_dir: Path, label: str, keep: int) -> None:
    """Drop all but the newest `keep` components of one app (each is large)."""
    pattern = re.compile(re.escape(label) + r"-[0-9a-f]{32}\.(wasm|lock)$")
    entries = [p for p in cache_dir.iterdir() if pattern.match(p.name)]
    wasms = sorted((p for p in entries if p.suffix == ".wasm"), key=_mtime, reverse=True)
    for old in wasms[keep:]:
        old.unlink(missing_ok=True)  # a reader that already opened it keeps its copy
        old.with_suffix(".lock").unlink(missing_ok=True)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def default_cache_dir() -> Path:
    """$WKHOST_CACHE_DIR, else $XDG_CACHE_HOME/wkhost/components, else ~/.cache/..."""
    if env := os.environ.get("WKHOST_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wkhost" / "components"
