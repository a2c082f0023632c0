"""`make demo-cluster`: three nodes over one PostgreSQL, an order run across them, the
node that serves it killed with kill -9, and the order finishing on another node.

    python examples/demo_cluster.py

Everything runs on 127.0.0.1: a PostgreSQL of its own in a temporary directory (as an
unprivileged user when run as root; host/testing/postgres.py), and three `wkhost serve
--cluster` nodes with lease times of a few seconds. All of it is stopped at the end.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from wkhost.partition import shard_of
from wkhost.testing.postgres import PgServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo import CLASSES, REPO, build_all, http, say  # noqa: E402

ORDER = {"item": "book", "qty": 1, "amount": 1200, "cool_off_ms": 8000}
LEASES = ["--lease-ttl", "3", "--lease-renew", "0.5", "--lease-deadline", "2"]


class Node:
    def __init__(self, name: str, base: Path, pg_url: str, wasm: dict[str, Path]) -> None:
        data = base / name
        (data / "_host").mkdir(parents=True)
        (data / "_host" / "admin-token").write_text((base / "token").read_text())
        cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0", "--data", str(data),
               "--cache-dir", str(REPO / ".cache" / "compiled"), "--log-level", "warning",
               "--access", "orders=internal", "--access", "ledger=internal",
               "--cluster", pg_url, "--node-id", name,
               "--cluster-secret-file", str(base / "secret"), *LEASES]
        for cls, path in wasm.items():
            cmd += ["--actor", f"{cls}={path}"]
        self.name = name
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.url = ""

    def ready(self) -> Node:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on " not in line:
            raise SystemExit(f"node {self.name} did not start (exit {self.proc.wait()})")
        self.url = line.strip().split("listening on ", 1)[1]
        say(f"   {self.name}: {self.url}")
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def owner(pg_url: str, actor_id: str) -> str | None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT owner FROM leases WHERE shard = %s AND expires_at > "
                           "clock_timestamp()", (shard_of(actor_id),)).fetchone()
    return None if row is None else str(row[0])


def state(url: str, oid: str) -> dict[str, Any]:
    _, s = http("GET", f"{url}/app/web/orders/{oid}")
    return s if isinstance(s, dict) else {"state": f"? {s}"}


def run(base: Path) -> None:
    wasm = build_all()
    assert set(wasm) == set(CLASSES)
    say("\n== 2. a PostgreSQL of its own, on 127.0.0.1 (the cluster's durable store)")
    with PgServer.start(base / "pg") as pg:
        say(f"   {pg.url}")
        (base / "secret").write_text(secrets.token_urlsafe(32) + "\n")
        (base / "token").write_text(secrets.token_urlsafe(32) + "\n")
        say("\n== 3. three nodes: wkhost serve --cluster postgresql://... --node-id n1 ...")
        nodes = [Node(f"n{i}", base, pg.url, wasm) for i in (1, 2, 3)]
        try:
            for node in nodes:
                node.ready()
            scenario(nodes, pg.url)
        finally:
            for node in nodes:
                node.stop()


def scenario(nodes: list[Node], pg_url: str) -> None:
    oid = "order-1"
    time.sleep(2)  # the nodes take their shards
    serves = owner(pg_url, oid)
    entry = next(n for n in nodes if n.name != serves)
    say(f"\n== 4. the order, sent to {entry.name}; its actor is served by {serves}")
    say(f"   POST {entry.url}/app/web/orders/{oid}  {json.dumps(ORDER)}")
    http("POST", f"{entry.url}/app/web/orders/{oid}", ORDER)
    http("POST", f"{entry.url}/app/web/orders/{oid}/approve", {"by": "ann"})
    time.sleep(1.0)
    say(f"   {oid}: {state(entry.url, oid)['state']} (in its {ORDER['cool_off_ms']} ms "
        "cool-off, a durable sleep)")
    victim = next(n for n in nodes if n.name == serves)
    say(f"\n== 5. kill -9 {victim.name}, the node that serves {oid}")
    os.kill(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait(10)
    alive = [n for n in nodes if n is not victim]
    started, last = time.monotonic(), ""
    while time.monotonic() - started < 90:
        s = state(alive[0].url, oid)
        now = f"{s['state']} (served by {owner(pg_url, oid) or 'nobody yet: lease expiring'})"
        if now != last:
            say(f"   +{time.monotonic() - started:4.1f} s  {oid}: {now}")
            last = now
        if s["state"] in ("completed", "failed"):
            say(f"   output: {json.dumps(s.get('output'), sort_keys=True)}")
            return
        time.sleep(0.3)
    raise SystemExit(f"{oid} did not finish after the kill")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="wk-demo-cluster-") as tmp:
        run(Path(tmp))
    say("\n   done: the order finished on another node; everything is stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
