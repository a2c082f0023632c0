"""The one module that imports the componentize-py bindings (`wit_world`).

Everything else in the SDK reaches the generated code through here, so a change in the
generated layout is fixed in one place. Importing this on plain CPython raises
ModuleNotFoundError: the bindings exist only inside a component build.
"""

from __future__ import annotations

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import (
    actors,
    alarm,
    attributes,
    http,
    lifecycle,
    log,
    metrics,
    overlap,
    sqlite,
    trace,
    types,
)

__all__ = ["Err", "actors", "alarm", "attributes", "exports", "http", "lifecycle", "log",
           "metrics", "overlap", "sqlite", "trace", "types"]
