"""`GET /_wk/classes`, for operators and readers: each class the host serves, its access
and its build (the sha256 of its component's file: what `wkhost workflow export` writes
beside an instance, and what an import compares with its own).

    {"classes": {"orders": {"access": "internal", "build": "9f2c..."}, ...}}

A build is hashed when first asked (a component is megabytes: not at every start), off
the event loop, and kept: a served class's file does not change while it is served.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from aiohttp import web

from .operator import may_read, plain


def add_routes(app: web.Application) -> None:
    app["builds"] = {}
    app.router.add_get("/_wk/classes", _classes)


async def _classes(request: web.Request) -> web.Response:
    if not may_read(request):
        return plain(403, "the classes' builds are for operators and readers (send a token)")
    builds: dict[Path, str] = request.app["builds"]
    out = {}
    for name, cls in sorted(request.app["host"].classes.items()):
        if cls.wasm not in builds:
            builds[cls.wasm] = await asyncio.to_thread(_sha256, cls.wasm)
        out[name] = {"access": cls.access, "build": builds[cls.wasm]}
    return web.json_response({"classes": out})


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
