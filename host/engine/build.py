"""Build a Python actor into a wasm component with componentize-py, with a content cache.

    build_component(Path("app.py"), Path("app.wasm"))            # always builds (~5 s)
    cached_build(Path("app.py"), Path(".cache/components"))      # builds once per input

componentize-py runs in a subprocess with `-p <app dir> -p <staged SDK> -p <extra>...`.
The cache key hashes the inputs, never the output (builds are not byte-reproducible):
the files the app imports from its directory and the extra paths, followed from its
source (host/guest_sources.py; a neighbouring guest's files are not among them), the
whole guest SDK, the WIT files, the app's module name, the protocols it declares and
the componentize-py version.

The component declares the protocols its class answers in a custom section
(`wk-protocols`, host/component_file.py), appended after componentize-py: a class made
by a module-level `wkguest.workflow.serve(...)` answers wk-workflow/v1.

Things componentize-py does that matter here:
- It imports the app at build time and snapshots the interpreter. A module first imported
  at run time is not found, so guests import everything at the top.
- It runs its own CPython (3.14 for 0.25.1), so the host's `compile()` can only prove a
  syntax error when the host Python is at least that new (see `_check_syntax`).
- It also puts the site-packages of the Python it finds on the guest's path, which this
  cache key does not cover: guests should depend only on the SDK and their own files.
- Its guest Python writes bytecode beside the modules it imports, into the user's
  directories, and takes no environment from ours (PYTHONDONTWRITEBYTECODE does not reach
  it): the staged SDK carries a sitecustomize that turns bytecode off at its start.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import wkguest

from ..errors import HostError  # relative: mypy cannot see the editable `wkhost` mapping
from .component_file import protocols_section
from .guest_sources import Sources, app_sources

Progress = Callable[[str], None]

WORLD = "actor"
WIT_DIR: Path = wkguest.WIT_DIR
SDK_DIR: Path = Path(wkguest.__file__).parent
# The CPython inside componentize-py 0.25.1 (pinned in pyproject.toml).
GUEST_PYTHON = (3, 14)
BUILD_TIMEOUT_S = 900
KEEP_PER_APP = 3
# Module names the build cannot use: the world's own name and the generated packages.
_RESERVED_MODULES = {WORLD, "wit_world", "componentize_py_types", "wkguest", "poll_loop"}
_SKIP_DIRS = {"__pycache__", "node_modules"}


class BuildError(HostError):
    """A build failed. `str(e)` is a one-line summary; `details` holds the relevant part
    of componentize-py's output (or of the source), for a human."""

    def __init__(self, summary: str, details: str = "") -> None:
        super().__init__(summary)
        self.details = details


# ---- the cache key ---------------------------------------------------------------------


def componentize_version() -> str:
    """The installed componentize-py version. Raises BuildError if it is not installed."""
    try:
        return importlib.metadata.version("componentize-py")
    except importlib.metadata.PackageNotFoundError:
        raise BuildError("componentize-py is not installed (pip install componentize-py)") from None


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


# ---- checks before building ------------------------------------------------------------


def _check_app(app: Path, extra_paths: Sequence[Path]) -> None:
    if not app.is_file():
        raise BuildError(f"app file not found: {app}")
    if app.suffix != ".py":
        raise BuildError(f"the app must be a .py file: {app}")
    if not app.stem.isidentifier() or app.stem in _RESERVED_MODULES:
        raise BuildError(f"{app.name}: '{app.stem}' cannot be the app's module name; rename it")
    for p in extra_paths:
        if not Path(p).is_dir():
            raise BuildError(f"--path is not a directory: {p}")
    _check_syntax(app)


def _syntax_error(err: SyntaxError, app: Path) -> BuildError:
    where = f"{err.filename or app}:{err.lineno or '?'}"
    details = (err.text or "").rstrip("\n")
    if details and err.offset:
        details += "\n" + " " * (err.offset - 1) + "^"
    return BuildError(f"syntax error at {where}: {err.msg}", details)


def _check_syntax(app: Path) -> None:
    """Fail fast, naming file:line, when the app does not parse.

    Only decisive when the host Python is at least the guest's: an older host rejects
    newer syntax (e.g. 3.12's nested f-string quotes) that the guest accepts, so there the
    build runs and componentize-py's own SyntaxError (mapped to file:line) is reported.
    """
    try:
        source = app.read_bytes()
        compile(source, str(app), "exec", dont_inherit=True)
    except SyntaxError as e:  # includes IndentationError, TabError
        if sys.version_info >= GUEST_PYTHON:
            raise _syntax_error(e, app) from None
    except ValueError as e:  # NUL bytes and the like
        raise BuildError(f"{app}: cannot be compiled: {e}") from None


# ---- running componentize-py -----------------------------------------------------------


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


def _stage_sdk(tmp: Path) -> Path:
    # A copy, so that an installed SDK does not drag its whole site-packages into the
    # component, and without wit/ (the build reads WIT from -d).
    dest = tmp / "sdk"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "wit")
    shutil.copytree(SDK_DIR, dest / "wkguest", ignore=ignore)
    (dest / "sitecustomize.py").write_text(_NO_BYTECODE)
    return dest


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
    syn = r'File "([^"]+)", line (\d+)\n(?:.*\n)*?\s*(\w*Error): (.*)'
    if "SyntaxError" in output and (m := re.search(syn, details)):
        return BuildError(f"syntax error at {m.group(1)}:{m.group(2)}: {m.group(4)}", details)
    last = details.strip().splitlines()[-1] if details.strip() else "no output"
    return BuildError(f"componentize-py failed for {app.name}: {last}", details)


def _run_componentize(app: Path, paths: Sequence[Path], out: Path, cwd: Path) -> None:
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


def _say(progress: Progress | None, line: str) -> None:
    if progress is not None:
        progress(line)


def _say_protocols(progress: Progress | None, app: Path, protocols: frozenset[str]) -> None:
    if protocols:
        _say(progress, f"{app.name} declares {', '.join(sorted(protocols))}")


def build_component(
    app: Path,
    out: Path,
    extra_paths: Sequence[Path] = (),
    progress: Progress | None = None,
) -> Path:
    """Build `app` (a .py file defining `Handler`) into the component `out`; return `out`.

    `out` appears atomically (written beside it, then renamed), so a reader never sees a
    half-written file; it declares the protocols the app's class answers (see the
    module's doc). Raises BuildError: app missing, syntax error (file:line), a module
    not found (use extra_paths), no `Handler`, or any other componentize-py failure.
    """
    app, out = Path(app).resolve(), Path(out).resolve()
    extras = [Path(p).resolve() for p in extra_paths]
    _check_app(app, extras)
    protocols = app_sources(app, extras).protocols
    out.parent.mkdir(parents=True, exist_ok=True)
    _say(progress, f"building {app.name} → {out.name} …")
    _say_protocols(progress, app, protocols)
    started = time.monotonic()
    tmp_out = out.with_name(f".{out.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="wkhost-build-") as tmp:
            paths = [app.parent, _stage_sdk(Path(tmp)), *extras]
            _run_componentize(app, paths, tmp_out, Path(tmp))
        if protocols:
            with open(tmp_out, "ab") as f:  # a component's sections run to its end
                f.write(protocols_section(protocols))
        os.replace(tmp_out, out)
    finally:
        tmp_out.unlink(missing_ok=True)
    size_mb = out.stat().st_size / 1e6
    _say(progress, f"built {out.name} in {time.monotonic() - started:.1f} s ({size_mb:.1f} MB)")
    return out


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    # flock is per open file description: it excludes other processes and other threads.
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached_build(
    app: Path,
    cache_dir: Path,
    extra_paths: Sequence[Path] = (),
    progress: Progress | None = None,
) -> Path:
    """`build_component` into `cache_dir`, once per distinct input (see `cache_key`).

    Safe for concurrent callers (threads, processes, pytest-xdist): one builds under a
    per-key file lock, the others wait and reuse its output.
    Raises BuildError (as `build_component`; a missing app is reported as such).
    """
    app = Path(app).resolve()
    if not app.is_file():
        raise BuildError(f"app file not found: {app}")
    sources = app_sources(app, extra_paths)
    key = cache_key(app, extra_paths, sources)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    label = app.parent.name if app.stem == "app" else app.stem  # examples/x/app.py -> x
    out = cache_dir / f"{label}-{key[:32]}.wasm"
    if not out.is_file():
        with _locked(cache_dir / f"{out.stem}.lock"):
            if not out.is_file():  # re-check: someone may have built it while we waited
                build_component(app, out, extra_paths, progress)
                _prune(cache_dir, label)
                return out
    _say(progress, f"using cached {out.name} for {app.name}")
    _say_protocols(progress, app, sources.protocols)
    return out


def _prune(cache_dir: Path, label: str, keep: int = KEEP_PER_APP) -> None:
    """Drop all but the newest `keep` components of one app (each is ~19 MB)."""
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


# ---- the `wkhost build` command --------------------------------------------------------


def default_cache_dir() -> Path:
    """$WKHOST_CACHE_DIR, else $XDG_CACHE_HOME/wkhost/components, else ~/.cache/..."""
    if env := os.environ.get("WKHOST_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wkhost" / "components"


_DESCRIPTION = """\
Build a Python actor (a module that defines `Handler = export(MyActor)`) into a
WebAssembly component with componentize-py (about 5 s; ~18 MB output).

Builds are cached by the content of their inputs (the files the app imports from its
directory and --path directories, the guest SDK, the WIT and the componentize-py
version), so building unchanged sources again is instant, and editing one app does not
rebuild the others beside it. A class made by `workflow.serve(...)` at module level is
declared in the component as answering wk-workflow/v1."""

_EPILOG = """\
examples:
  wkhost build examples/counter/app.py -o counter.wasm
  wkhost build app.py -o app.wasm --path ../shared_lib --no-cache

exit status: 0 built, 1 build error, 2 usage error"""


def add_build_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Register `build` on the CLI's subparsers (sets `args.run`, alias `args.func`)."""
    p = subparsers.add_parser(
        "build",
        help="build a Python actor into a wasm component",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("app", type=Path, metavar="APP.py", help="the app module (defines Handler)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.wasm",
                   help="where to write the component")
    p.add_argument("--path", dest="paths", type=Path, action="append", default=[],
                   metavar="DIR", help="another directory of modules the app imports "
                   "(repeatable; the app's own directory is always included)")
    p.add_argument("--no-cache", action="store_true", help="build even if cached, and "
                   "do not store the result")
    p.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="the build cache (default: $WKHOST_CACHE_DIR or "
                   "~/.cache/wkhost/components)")
    p.set_defaults(run=run_build, func=run_build)  # wkhost.cli dispatches on `run`
    return p


def _copy_atomic(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def run_build(args: argparse.Namespace) -> int:
    """Run `wkhost build` with parsed `args`: 0 built, 1 build error, 2 usage error."""

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    app, out = Path(args.app), Path(args.output)
    if app.suffix != ".py":
        print(f"wkhost build: error: APP must be a .py file, got {app}", file=sys.stderr)
        return 2
    try:
        if args.no_cache:
            build_component(app, out, args.paths, progress)
        else:
            cache = args.cache_dir or default_cache_dir()
            _copy_atomic(cached_build(app, cache, args.paths, progress), out)
            progress(f"wrote {out}")
    except BuildError as e:
        print(f"wkhost build: error: {e}", file=sys.stderr)
        if e.details:
            print(e.details, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"wkhost build: error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m wkhost.build ...`: the `build` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="wkhost")
    add_build_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
