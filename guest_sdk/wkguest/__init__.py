"""wkguest: the SDK for writing wkhost actors in Python.

    from wkguest import Actor, Request, Response, export
    from wkguest import sqlite

    class Counter(Actor):
        def on_init(self) -> None:
            sqlite.exec("CREATE TABLE n (v INTEGER)")
        def handle(self, req: Request) -> Response:
            return Response.text("hello")

    Handler = export(Counter)      # the name componentize-py looks for

Modules, one per WIT interface: `sqlite`, `alarm`, `actors`, `http`, `lifecycle`,
`attributes`, `log`, `metrics`, `trace`; plus
`actor` (the base class and `export`), `types`, `errors`, `codec`.

`types`, `errors`, `codec` and this package itself import on plain CPython. The rest need
the bindings componentize-py generates (`wit_world`), so `Actor` and `export` are loaded
lazily here, on first access.

Build-time rule: componentize-py snapshots the interpreter after importing the app, and
a module first imported *at run time* is not found (ModuleNotFoundError). So import every
module you use at the top of the app, never inside a function.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from wkguest import errors
from wkguest.types import ActorRef, Request, Response, Sender

if TYPE_CHECKING:
    from wkguest.actor import Actor, export

WIT_DIR: Path = Path(__file__).parent / "wit"
"""The WIT package this SDK is written against (a copy of, or link to, the repo's wit/)."""

__all__ = ["WIT_DIR", "Actor", "ActorRef", "Request", "Response", "Sender", "errors", "export"]

_LAZY = {"Actor", "export"}


def __getattr__(name: str) -> Any:
    # Only reached for names not defined above: load the bindings-backed ones on demand.
    if name in _LAZY:
        from wkguest import actor

        return getattr(actor, name)
    raise AttributeError(f"module 'wkguest' has no attribute {name!r}")
