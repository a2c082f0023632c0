"""The console's compatibility report: `POST /_wk/console/api/compat`, an operator's
question "would this build replay the class's live instances?".

    {"cls": C, "wasm": PATH}  →  {"code": EXIT, "report": {...} | null, "error": TEXT | null}

PATH is a component on the server's own machine (where a deploy puts its files). The
report is `wkhost workflow compat`'s own (host/cli/compat.py, docs/operating.md), run
as that command, in a process of its own, against this server's own address with its
admin token read from its data directory: it starts a server of its own for the copies,
which has no place inside a serving host. Only read: each instance's export is a
read-only event. Refused before anything runs: no session (401), another origin or no
CSRF token (403), a reader's session (403), an unknown class or a PATH that is not a
.wasm file there (400).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from aiohttp import web

from .api import json_answer, refused

TIMEOUT_S = 600  # a class with thousands of live instances takes minutes


def add_routes(app: web.Application, prefix: str) -> None:
    app.router.add_post(f"{prefix}/api/compat", _compat)


async def _compat(request: web.Request) -> web.Response:
    no = refused(request)
    if no is not None:
        return no
    try:
        doc = json.loads(await request.read())
        cls, wasm = str(doc["cls"]), Path(str(doc["wasm"]))
    except (ValueError, KeyError, TypeError):
        return json_answer({"error": "give a JSON map {cls, wasm}"}, 400)
    host = request.app["host"]
    if cls not in host.classes:
        return json_answer({"error": f"no actor class named {cls!r}"}, 400)
    if wasm.suffix != ".wasm" or not wasm.is_file():
        return json_answer({"error": f"{wasm}: no .wasm file there on the server"}, 400)
    address = request.transport.get_extra_info("sockname") if request.transport else None
    if not address:
        return json_answer({"error": "this request's own address is unknown"}, 500)
    own = f"http://{address[0]}:{address[1]}" if ":" not in address[0] \
        else f"http://[{address[0]}]:{address[1]}"
    return json_answer(await _run(cls, wasm, own, host.config.data_dir))


async def _run(cls: str, wasm: Path, server: str, data: Path) -> dict[str, object]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "wkhost.cli", "workflow", "compat", cls, str(wasm.resolve()),
        "--json", "--server", server, "--data", str(data.resolve()),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return {"code": None, "report": None, "error": f"no report in {TIMEOUT_S} s"}
    try:
        report = json.loads(out)
    except ValueError:
        report = None
    tail = err.decode(errors="replace").strip().splitlines()[-3:]
    return {"code": proc.returncode, "report": report,
            "error": None if report is not None else "\n".join(tail) or "no report"}
