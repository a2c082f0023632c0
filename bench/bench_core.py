"""Runtime core: compile vs cached load, instantiation, events, and 1 MiB crossings.

    .venv/bin/python -m bench.bench_core [--repeats 7]

All figures are medians (with min and max) over repeated runs, on a real built component
and real SQLite files. Nothing here asserts a speed: it prints and saves figures.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from wasmtime.component import Component
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.engine.components import load_component, make_engine
from wkhost.engine.instance import ComponentExports, Instance
from wkhost.types import Request, Sender

from bench.common import (
    COMPILED,
    SMOKE_HELP,
    print_table,
    probe_wasm,
    save,
    scratch_dir,
    smoke_results,
    summary,
    timed,
)


def bench_compile(wasm: Path, repeats: int) -> dict[str, Any]:
    engine = make_engine()
    data = wasm.read_bytes()
    cold = []
    for _ in range(max(1, repeats // 3)):
        started = time.perf_counter()
        Component(engine, data)
        cold.append((time.perf_counter() - started) * 1e6)
    load_component(engine, wasm, COMPILED)  # make sure the artifact is cached
    cached = timed(lambda: load_component(engine, wasm, COMPILED), repeats, inner=5)
    return {"cold compile": summary(cold), "cached load (sha256 + mmap)": cached}


def bench_instantiate(wasm: Path, repeats: int) -> dict[str, Any]:
    host = Host(HostConfig(data_dir=scratch_dir("wkbench-core-"), cache_dir=COMPILED))
    cls = host.add_class("probe", wasm)
    exports: ComponentExports = cls.exports
    result = timed(lambda: Instance(host.engine, cls.linker, exports, 256 << 20,
                                    lambda _d: None), repeats, inner=20)
    host.close()
    return {"instantiate (Store + WASI + instance)": result}


def bench_events(wasm: Path, repeats: int) -> dict[str, Any]:
    host = Host(HostConfig(data_dir=scratch_dir("wkbench-core-"), cache_dir=COMPILED))
    host.add_class("probe", wasm)
    host.start()
    ref = host.actor_ref("probe", "bench")
    op = Sender.operator()

    def send(method: str, path: str, body: bytes = b"", query: str = "") -> Any:
        resp = host.request(ref, Request(method, path, query, [], body), op)
        assert resp.status == 200, resp.body[:200]
        return resp

    send("POST", "/sql", b'{"sql": "CREATE TABLE t (v)", "params": []}')
    mib = bytes(range(256)) * 4096
    insert = b'{"sql": "INSERT INTO t VALUES (1)", "params": [], "durable": true}'
    out = {
        "trivial event (GET /now)": timed(lambda: send("GET", "/now"), repeats, 200),
        "event with one exec-durable INSERT": timed(lambda: send("POST", "/sql", insert),
                                                    repeats, 100),
        "1 MiB host -> guest (body in, small answer)": timed(
            lambda: send("POST", "/now", mib), repeats, 10),
        "1 MiB guest -> host (GET /big?kb=1024)": timed(
            lambda: send("GET", "/big", query="kb=1024"), repeats, 10),
        "1 MiB round trip (echo)": timed(lambda: send("POST", "/echo", mib), repeats, 10),
    }
    host.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP + " (--repeats 1)")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.repeats = 1
    wasm = probe_wasm()
    figures: dict[str, Any] = {}
    for part in (bench_compile, bench_instantiate, bench_events):
        figures.update(part(wasm, args.repeats))
    print_table("runtime core (per operation)", list(figures.items()))
    print(f"  saved {save('core', figures)}")
    return figures


if __name__ == "__main__":
    main()
