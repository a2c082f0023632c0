"""Whatever can be checked without compiling is checked before the first compile, which
takes seconds per class: the data and cache directories can be written
(`check_writable`), each file is a component built for this host's world
(`check_components`), the classes and their options are sound (`served_classes`), and
the port is free (`reserve_address` binds it, and the server listens on it once the
classes are loaded).
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path
from typing import cast

import wkguest

from ..config import HostConfig
from ..engine.component_file import World, check_component
from ..errors import HostError
from ..events.classes import Access
from ..storage import paths
from .connections import os_reason, reserve_address
from .data_lock import lock_data_dir
from .serve import ServeOptions, admin_token
from .tokens import TokensFileError, read_tokens


def check_writable(d: Path, flag: str) -> None:
    """Make `d` if it is missing, and write a file in it and remove it: a directory the
    server cannot write is found before any class is compiled. Raises HostError that
    names `flag` (the option, or what the directory is) and the reason."""
    if d.exists() and not d.is_dir():
        raise HostError(f"{flag} {d}: not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=d, prefix=".wk-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        where = "" if e.filename in (None, str(d)) else f" ({e.filename})"
        raise HostError(f"{flag} {d}: {os_reason(e)}{where}") from None


class UsageError(HostError):
    """A mistake in the command line's options (exit code 2)."""

    kind = "UsageError"


def served_classes(actors: list[tuple[str, str]], access: list[tuple[str, str]],
                   reuse: list[str]) -> tuple[list[tuple[str, Path]], dict[str, Access]]:
    """The classes of `--actor NAME=FILE` and their `--access NAME=LEVEL`, checked: a
    bad or repeated name, a level other than internal or public, or an option about a
    class not served is UsageError, which names the option."""
    files: dict[str, str] = {}
    for name, file in actors:
        try:
            paths.check_class(name)
        except HostError as e:
            raise UsageError(f"--actor {name}={file}: {e}") from None
        if name in files:
            raise UsageError(f"--actor {name} is given twice ({name}={files[name]} and "
                             f"{name}={file}): each class is served from one file")
        files[name] = file
    levels: dict[str, Access] = {}
    for name, level in access:
        levels[name] = _access_level(name, level, files, levels.get(name))
    for name in reuse:
        _must_be_served("--reuse-instances", name, name, files)
    return [(n, Path(f)) for n, f in files.items()], levels


def _access_level(name: str, level: str, files: dict[str, str],
                  before: Access | None) -> Access:
    if level not in ("internal", "public"):
        raise UsageError(f"--access {name}={level}: class {name}'s access is internal or "
                         f"public, not {level!r}")
    _must_be_served("--access", name, f"{name}={level}", files)
    if before is not None and before != level:
        raise UsageError(f"--access {name} is given twice, as {before} and {level}")
    return cast(Access, level)


def _must_be_served(flag: str, name: str, given: str, files: dict[str, str]) -> None:
    if name not in files:
        served = ", ".join(files) or "none"
        raise UsageError(f"{flag} {given}: no class {name} is served (served: {served}; "
                         f"add --actor {name}=FILE.wasm)")


def preflight(config: HostConfig, opts: ServeOptions, handed_lock_fd: int | None,
              cache_flag: str, bind: bool) -> tuple[int, list[socket.socket]]:
    """Everything checked before any class is compiled, in order: the data directory
    can be written, no other server holds it (`lock_data_dir`, whose descriptor this
    returns), each file is a component for this world, the tokens file reads
    (`--tokens-file`), the compile cache can be written, and (`bind`) the address is
    free (the sockets `reserve_address` bound)."""
    check_writable(config.data_dir, "--data")
    check_writable(config.data_dir / "_host", "--data")
    lock_fd = lock_data_dir(config.data_dir, handed_lock_fd)
    check_components(opts.actors)
    if opts.tokens_file is not None:  # read again by each process as it starts serving
        try:
            read_tokens(admin_token(config, opts.admin_token_file)[0], opts.tokens_file)
        except TokensFileError as e:
            raise HostError(f"--tokens-file {e}") from None
    check_writable(config.compile_cache(), cache_flag)
    return lock_fd, reserve_address(opts.host, opts.port) if bind else []


def check_components(actors: list[tuple[str, Path]]) -> None:
    """Each file is a component built for this host's world, read from its bytes alone
    (host/engine/component_file.py). Raises HostError naming the file and what it is."""
    world = World.from_wit(wkguest.WIT_DIR)
    for _, wasm in actors:
        check_component(wasm, world)
