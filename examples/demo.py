"""`make demo`: build the example components, serve them, and run an order to its end.

    python examples/demo.py [--keep]

Everything runs on 127.0.0.1 with a fresh data directory; the server is stopped at the
end (--keep leaves the data directory for a look with `wkhost workflow ...`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wkhost.cli.admin import request
from wkhost.cli.client import WorkflowAdmin
from wkhost.engine.build import cached_build

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "workflows"
CLASSES = {"orders": EXAMPLES / "orders" / "app.py", "ledger": EXAMPLES / "ledger" / "app.py",
           "app": EXAMPLES / "app" / "app.py"}
ORDER = {"item": "book", "qty": 1, "amount": 1200, "trap_in_pack": True,
         "charge_failures": 2, "cool_off_ms": 1500, "notify_fails": True}


def say(text: str = "") -> None:
    print(text, flush=True)


def build_all() -> dict[str, Path]:
    say("== 1. building the example components (cached by content after the first time)")
    cache = REPO / ".cache" / "components"
    return {name: cached_build(app, cache, progress=lambda line: say(f"   {line}"))
            for name, app in CLASSES.items()}


class Served:
    def __init__(self, wasm: dict[str, Path], data: Path) -> None:
        cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0", "--data", str(data),
               "--cache-dir", str(REPO / ".cache" / "compiled"), "--log-level", "warning",
               "--access", "orders=internal", "--access", "ledger=internal"]
        for name, path in wasm.items():
            cmd += ["--actor", f"{name}={path}"]
        say("== 2. serving: wkhost serve --actor orders=… --actor ledger=… --actor app=… "
            "--access orders=internal --access ledger=internal")
        say("   (the first start compiles each component, a few seconds each; later starts "
            "load them from the cache in milliseconds)")
        self.data = data
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on " not in line:
            raise SystemExit(f"the server did not start (exit {self.proc.wait()})")
        self.url = line.strip().split("listening on ", 1)[1]
        say(f"   {line.strip()}")

    def stop(self) -> int:
        self.proc.terminate()
        rc = self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return rc


def http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    """A public request (no token) with a JSON body: its status and its JSON (an error's
    text, if that is not JSON)."""
    data = None if body is None else json.dumps(body).encode()
    answer = request(method, url, body=data, timeout=30)
    if 200 <= answer.status < 300:  # what urllib does not raise as an HTTPError
        return answer.status, json.loads(answer.body)
    text = answer.body.decode(errors="replace").strip()
    try:
        return answer.status, json.loads(text)
    except ValueError:
        return answer.status, text


def describe(s: dict[str, Any]) -> str:
    text = f"{s['state']}, {s['positions']} positions"
    if s.get("waiting_for"):
        text += f", waiting for {', '.join(s['waiting_for'])}"
    return text


def follow(app: str, order_id: str, until: set[str], timeout: float = 60) -> dict[str, Any]:
    """Poll the app for the order's status, printing each change, until a state in `until`."""
    last, end = "", time.monotonic() + timeout
    while time.monotonic() < end:
        _, s = http("GET", f"{app}/orders/{order_id}")
        if describe(s) != last:
            last = describe(s)
            say(f"   {time.strftime('%H:%M:%S')}  {order_id}: {last}")
        if s["state"] in until:
            return s  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise SystemExit(f"{order_id} did not reach {until} in {timeout} s")


def scenario(server: Served) -> None:
    app = f"{server.url}/app/web"
    say("\n== 3. an order, through the public app actor (orders and ledger are internal)")
    say(f"   POST /app/web/orders/order-1  {json.dumps(ORDER)}")
    http("POST", f"{app}/orders/order-1", ORDER)
    say("   its packing step traps once, the charge fails twice, and the workflow sleeps "
        f"{ORDER['cool_off_ms']} ms, then waits for approval:")
    follow(app, "order-1", {"waiting"})
    while "approved" not in http("GET", f"{app}/orders/order-1")[1]["waiting_for"]:
        time.sleep(0.1)
    follow(app, "order-1", {"waiting"})
    say('   POST /app/web/orders/order-1/approve  {"by": "ann"}')
    http("POST", f"{app}/orders/order-1/approve", {"by": "ann"})
    done = follow(app, "order-1", {"completed", "failed"})
    say(f"   output: {json.dumps(done['output'], sort_keys=True)}")
    show_steps(server)
    show_refusals(server, app)


def show_steps(server: Served) -> None:
    token = (server.data / "_host" / "admin-token").read_text().strip()
    say("\n== 4. what was recorded: wkhost workflow steps orders order-1")
    for st in WorkflowAdmin(server.url, token).steps("orders", "order-1"):
        say(f"   {st['pos']:>2}  {st['kind']:<5} {st['name']:<9} {st['state']:<7} "
            f"attempts={st['attempts']}  {st.get('error') or ''}"[:150])


def show_refusals(server: Served, app: str) -> None:
    say("\n== 5. the rules at the edges")
    status, body = http("POST", f"{server.url}/orders/order-1/wk-workflow/v1/cancel")
    say(f"   the public calling the internal orders class directly: {status} {body}")
    status, body = http("POST", f"{app}/orders/order-1/approve", {"by": "bob"})
    say(f"   an event to a finished order: {status} {body['error']}")
    status, body = http("GET", f"{app}/orders/never-started")
    say(f"   the status of an id never started: {status} {body['error']}")
    http("POST", f"{app}/orders/order-2", dict(ORDER, trap_in_pack=False, cool_off_ms=0))
    follow(app, "order-2", {"waiting"})
    _, s = http("POST", f"{app}/orders/order-2/cancel")
    say(f"   order-2 cancelled while it waited: {describe(s)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Build, serve and drive the workflow example.")
    p.add_argument("--keep", action="store_true", help="keep the data directory")
    args = p.parse_args(argv)
    wasm = build_all()
    data = Path(tempfile.mkdtemp(prefix="wkhost-demo-"))
    server = Served(wasm, data)
    try:
        scenario(server)
    finally:
        rc = server.stop()
        say(f"\n== 6. SIGTERM: the server stopped {'cleanly' if rc == 0 else f'with {rc}'}")
        if args.keep:
            say(f"   data kept in {data}")
        else:
            shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
