"""How a HostConfig field (host/config.py) becomes an option of `wkhost serve`: the field
says its option, its help and its unit where it is defined, and the CLI makes the option
from that (host/cli/serve_flags.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Flag:
    """How `wkhost serve` sets one field: `option` takes the value in `unit`s (the field
    holds value * unit: --memory-mb 256 is 256 MiB), and `help` explains it, with
    %(default)s for the default in that unit. `parse` reads the value (default: the type
    of the field's default); a bool field is a switch. `serve_default`: the option's
    default, where `wkhost serve`'s differs from a HostConfig made in code (a test's, a
    benchmark's in-process host)."""

    option: str
    help: str
    unit: int = 1
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    serve_default: Any = None


def flag(default: Any, option: str, help: str, **spec: Any) -> Any:
    """A field with `default` that `wkhost serve` sets with `option` (see Flag)."""
    return field(default=default, metadata={"flag": Flag(option, help, **spec)})
