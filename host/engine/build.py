"""Build a Python actor into a wasm component with componentize-py, with a content cache.

    build_component(Path("app.py"), Path("app.wasm"))            # always builds
    cached_build(Path("app.py"), Path(".cache/components"))      # builds once per input

componentize-py runs in a subprocess (host/engine/componentize.py). The cache is keyed
by the inputs of a build, never its output (builds are not byte-reproducible): what they
are is host/engine/build_cache.py's to say.

The component declares the protocols its class answers in a custom section
(`wk-protocols`, host/engine/component_file.py), appended after componentize-py: a class
made by a module-level `wkguest.workflow.serve(...)` answers wk-workflow/v1.

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

This module is also the `wkhost build` command (`add_build_command`, `run_build`), and
runs it on its own as `python -m wkhost.engine.build`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .build_cache import app_label, cache_entry, cache_key, default_cache_dir, locked, prune
from .component_file import protocols_section
from .componentize import WORLD, BuildError, run_componentize, stage_sdk
from .guest_sources import app_sources

__all__ = ["BuildError", "Progress", "add_build_command", "build_component", "cached_build",
           "main", "run_build"]

Progress = Callable[[str], None]

# The CPython inside componentize-py 0.25.1 (pinned in pyproject.toml).
GUEST_PYTHON = (3, 14)
KEEP_PER_APP = 3
# Module names the build cannot use: the world's own name and the generated packages.
_RESERVED_MODULES = {WORLD, "wit_world", "componentize_py_types", "wkguest", "poll_loop"}


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


# ---- building ----------------------------------------------------------------------


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
    _build_into(app, extras, protocols, out)
    size_mb = out.stat().st_size / 1e6
    _say(progress, f"built {out.name} in {time.monotonic() - started:.1f} s ({size_mb:.1f} MB)")
    return out


def _build_into(app: Path, extras: list[Path], protocols: frozenset[str], out: Path) -> None:
    """componentize-py into a file beside `out`, the protocols' section appended, then
    renamed to `out`."""
    tmp_out = out.with_name(f".{out.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="wkhost-build-") as tmp:
            paths = [app.parent, stage_sdk(Path(tmp)), *extras]
            run_componentize(app, paths, tmp_out, Path(tmp))
        if protocols:
            with open(tmp_out, "ab") as f:  # a component's sections run to its end
                f.write(protocols_section(protocols))
        os.replace(tmp_out, out)
    finally:
        tmp_out.unlink(missing_ok=True)


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
    out = cache_entry(Path(cache_dir), app, cache_key(app, extra_paths, sources))
    if not out.is_file() and _build_once(app, out, extra_paths, progress):
        return out
    _say(progress, f"using cached {out.name} for {app.name}")
    _say_protocols(progress, app, sources.protocols)
    return out


def _build_once(app: Path, out: Path, extra_paths: Sequence[Path],
                progress: Progress | None) -> bool:
    """Build the cache entry `out`, unless another caller did while this one waited for
    the lock: True if this one built it."""
    with locked(out.with_suffix(".lock")):
        if out.is_file():
            return False
        build_component(app, out, extra_paths, progress)
        prune(out.parent, app_label(app), KEEP_PER_APP)
        return True


# ---- the `wkhost build` command --------------------------------------------------------


_DESCRIPTION = """\
Build a Python actor (a module that defines `Handler = export(MyActor)`) into a
WebAssembly component with componentize-py.

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
    _add_arguments(p)
    p.set_defaults(run=run_build, func=run_build)  # wkhost.cli dispatches on `run`
    return p


def _add_arguments(p: argparse.ArgumentParser) -> None:
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


def _copy_atomic(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_build(args: argparse.Namespace) -> int:
    """Run `wkhost build` with parsed `args`: 0 built, 1 build error, 2 usage error."""
    app, out = Path(args.app), Path(args.output)
    if app.suffix != ".py":
        print(f"wkhost build: error: APP must be a .py file, got {app}", file=sys.stderr)
        return 2
    try:
        _build_to(app, out, args)
    except (BuildError, OSError) as e:
        print(f"wkhost build: error: {e}", file=sys.stderr)
        if isinstance(e, BuildError) and e.details:
            print(e.details, file=sys.stderr)
        return 1
    return 0


def _build_to(app: Path, out: Path, args: argparse.Namespace) -> None:
    if args.no_cache:
        build_component(app, out, args.paths, _progress)
    else:
        cache = args.cache_dir or default_cache_dir()
        _copy_atomic(cached_build(app, cache, args.paths, _progress), out)
        _progress(f"wrote {out}")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m wkhost.engine.build ...`: the `build` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="wkhost")
    add_build_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
