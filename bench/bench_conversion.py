"""wasmtime-py value conversion, stock vs patched by host/engine/fastconv.py, through the real Host.

    .venv/bin/python -m bench.bench_conversion [--repeats 7] [--calls 500] [--per-event 25]

Each variant runs in its own subprocess, so the patch cannot leak into the stock run (the
stock run also sets WKHOST_FASTCONV=0, in case make_engine installs the patch itself).
Workloads, each timed `--repeats` times and reported as the median:
- handle: `--calls` trivial events through Host.request (the guest echoes the body), so
  one exported call `handle(request, sender) -> response` plus the host's event overhead.
- select: the guest calls `sqlite.exec` returning 100 rows x 3 typed columns
  (integer, real, text), `--per-event` times per event, `--calls` host calls in all.
- insert: the same with an INSERT of 5 params (integer, real, text, blob, null).
For select/insert, "per call" is (event time - a trivial event's time) / per-event, so the
event overhead is not counted; it includes the guest's side (componentize-py lifting and
lowering its values, sqlite itself), which the patch does not change.

The guest is built once (~7 s) into .cache/components; its compiled form is cached in
.cache/bench_conversion (the first run also compiles it, ~5 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, SMOKE_HELP, save, smoke_results

WORK = REPO / ".cache" / "bench_conversion"

GUEST = '''\
from wit_world import exports
from wit_world.imports import sqlite, types

SELECT = ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100) "
          "SELECT i, i * 1.5, 'row ' || i FROM c")
INSERT = "INSERT INTO t VALUES (?, ?, ?, ?, ?)"


class Handler(exports.Handler):
    def on_init(self):
        sqlite.exec("CREATE TABLE IF NOT EXISTS t (a, b, c, d, e)", [])

    def on_alarm(self):
        return None

    def handle(self, req, sender):
        n = int(req.query or "0")
        out = req.body
        if req.path == "/select":
            for _ in range(n):
                rows = sqlite.exec(SELECT, [])
                assert len(rows.rows) == 100 and len(rows.rows[0]) == 3
        elif req.path == "/insert":
            for i in range(n):
                sqlite.exec(INSERT, [sqlite.Value_Integer(i), sqlite.Value_Real(0.5),
                                     sqlite.Value_Text("text"), sqlite.Value_Blob("\\x00\\xff"),
                                     sqlite.Value_Null()])
        return types.Response(status=200, headers=[], body=out)
'''


def build_guest() -> Path:
    from wkhost.engine.build import cached_build

    app = WORK / "fcbench" / "app.py"
    app.parent.mkdir(parents=True, exist_ok=True)
    if not app.is_file() or app.read_text() != GUEST:
        app.write_text(GUEST)
    return Path(cached_build(app, REPO / ".cache" / "components"))


def child(mode: str, wasm: Path, repeats: int, calls: int, per_event: int) -> dict[str, float]:
    if mode == "stock":
        os.environ["WKHOST_FASTCONV"] = "0"
    else:
        from wkhost.engine import fastconv

        assert fastconv.install()
    from wkhost.config import HostConfig
    from wkhost.core.host import Host
    from wkhost.types import Request, Sender

    sender = Sender.public()
    with tempfile.TemporaryDirectory(prefix="bench-conv-") as tmp:
        host = Host(HostConfig(data_dir=Path(tmp), cache_dir=WORK / "compiled",
                               cpu_budget_ms=10_000))
        host.add_class("bench", wasm)
        host.start()
        try:
            ref = host.actor_ref("bench", "a")

            def timed(path: str, query: str, events: int) -> float:
                """Median over `repeats` of the time per event, in us."""
                req = Request("POST", path, query, [], b"hi")
                for _ in range(20):
                    assert host.request(ref, req, sender).status == 200
                runs = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    for _ in range(events):
                        host.request(ref, req, sender)
                    runs.append((time.perf_counter() - t) / events * 1e6)
                return statistics.median(runs)

            events = max(1, calls // per_event)
            out = {"handle_us": timed("/echo", "", calls)}
            for name in ("select", "insert"):
                ev = timed(f"/{name}", str(per_event), events)
                out[f"{name}_event_us"] = ev
                out[f"{name}_call_us"] = (ev - out["handle_us"]) / per_event
            return out
        finally:
            host.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--per-event", type=int, default=25, help="host calls per select/insert event")
    ap.add_argument("--child", choices=["stock", "fastconv"], help=argparse.SUPPRESS)
    ap.add_argument("--wasm", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true",
                    help=SMOKE_HELP + " (--repeats 1 --calls 20 --per-event 5)")
    args = ap.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.repeats, args.calls, args.per_event = 1, 20, 5
    if args.child:
        print(json.dumps(child(args.child, args.wasm, args.repeats, args.calls, args.per_event)))
        return 0

    wasm = build_guest()
    results = {}
    for mode in ("stock", "fastconv"):
        cmd = [sys.executable, "-m", "bench.bench_conversion", "--child", mode,
               "--wasm", str(wasm), "--repeats", str(args.repeats), "--calls", str(args.calls),
               "--per-event", str(args.per_event)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            return 1
        results[mode] = json.loads(proc.stdout.strip().splitlines()[-1])

    print(f"medians of {args.repeats} runs; {args.calls} events (handle) or host calls "
          f"(select, insert; {args.per_event} per event)")
    rows = [
        ("handle: trivial event via Host.request, us/event", "handle_us"),
        ("select: sqlite.exec -> 100x3 typed rows, us/call", "select_call_us"),
        ("  (its event with the calls, us/event)", "select_event_us"),
        ("insert: sqlite.exec with 5 params, us/call", "insert_call_us"),
        ("  (its event with the calls, us/event)", "insert_event_us"),
    ]
    print(f"{'':52} {'stock':>10} {'fastconv':>10} {'speedup':>8}")
    for label, key in rows:
        a, b = results["stock"][key], results["fastconv"][key]
        print(f"{label:52} {a:10.1f} {b:10.1f} {a / b:7.2f}x")
    saved = save("conversion", {"repeats": args.repeats, "calls": args.calls,
                                "per_event": args.per_event, **results})
    print(f"  saved {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
