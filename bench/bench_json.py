"""The protocol's two faces: a start through JSON beside one through CBOR, and a status
read each way (issue 47: host/net/json_face.py translates JSON at the front door).

    .venv/bin/python -m bench.bench_json [--runs 50] [--quick]

Through a real `wkhost serve` (the guest is examples/workflows/cart/app.py): "start"
starts a new instance whose workflow is one step, the answer held until it completed;
"status" reads one instance's status map. Each is timed from the request to the answer
on one kept-alive connection, the CBOR and JSON forms taking turns within each round
(two warm-up rounds first): a median with min and max over `runs`. There is no peer:
every peer's protocol is JSON alone, or CBOR-free. Saved to bench/results/json.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import cbor2

from bench.common import REPO, SMOKE_HELP, fmt_us, remove_scratch, save, smoke_results, summary

CLS = "carts"
GUEST = REPO / "examples" / "workflows" / "cart" / "app.py"
FACES: dict[str, tuple[str, Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "CBOR": ("application/cbor", cbor2.dumps, cbor2.loads),
    "JSON": ("application/json", lambda m: json.dumps(m).encode(), json.loads),
}


class Conn:
    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        self.token = token

    def post(self, path: str, msg: Any, face: str) -> Any:
        ctype, dumps, loads = FACES[face]
        self.conn.request("POST", path, dumps(msg), {"Authorization": f"Bearer {self.token}",
                                                     "Content-Type": ctype})
        resp = self.conn.getresponse()
        doc = loads(resp.read())
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status} {doc}")
        return doc


def bench(runs: int) -> dict[str, Any]:
    from wkhost.engine.build import cached_build

    from bench.server import BenchServer

    wasm = cached_build(GUEST, REPO / ".cache" / "components",
                        progress=lambda line: print(f"  [build] {line}", flush=True))
    server = BenchServer({CLS: wasm}, [])
    conn = Conn(server.url, server.token)
    base = f"/{CLS}/{{}}/wk-workflow/v1/"
    samples: dict[str, list[float]] = {}
    try:
        conn.post(base.format("read") + "start", {"input": None}, "CBOR")
        for r in range(runs + 2):
            for face in FACES:
                for what, path, msg, state in (
                        ("start: one step", base.format(f"{face}-{r}") + "start",
                         {"input": "one step", "wait_ms": 60_000}, "completed"),
                        ("status", base.format("read") + "status", {}, "waiting")):
                    t0 = time.perf_counter()
                    got = conn.post(path, msg, face)
                    us = (time.perf_counter() - t0) * 1e6
                    if got.get("state") != state:
                        raise RuntimeError(f"{what} through {face}: {got!r}"[:300])
                    if r >= 2:
                        samples.setdefault(f"{what}, {face}", []).append(us)
    finally:
        conn.conn.close()
        server.close()
    return {name: summary(s) for name, s in samples.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50, help="timed runs of each (50)")
    p.add_argument("--quick", action="store_true", help="--runs 15")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (--runs 1)")
    args = p.parse_args(argv)
    if args.quick:
        args.runs = 15
    if args.smoke:
        smoke_results()
        args.runs = 1
    if args.runs < 1:
        p.error("--runs takes 1 or more")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    figs = {"runs": args.runs, "serve": bench(args.runs)}
    remove_scratch()
    print(f"\n  {'through the front door':<28} {'median':>9} {'min':>9} {'max':>9} {'/CBOR':>7}")
    for name, s in figs["serve"].items():
        cbor = figs["serve"].get(name.replace("JSON", "CBOR"), {}).get("median")
        print(f"  {name:<28} {fmt_us(s['median']):>9} {fmt_us(s['min']):>9} "
              f"{fmt_us(s['max']):>9} {s['median'] / cbor if cbor else 0:>6.2f}x")
    print(f"  saved {save('json', figs)}")
    return figs


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
