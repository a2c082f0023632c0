"""Listing without waking anyone: among 10,000 workflow instances, a page of 100 filtered by
status, read from the host's index through the front door, with no event in any instance.

    .venv/bin/python -m bench.bench_listing [--instances 10000] [--repeats 50]

What it does: an in-process Host (examples/bench/app.py as `wfbench`) with the real front
door (host/net/frontdoor.py's app on 127.0.0.1), and `instances` instances: one in ten
completes at once (3 steps), the others sleep until the far future ("waiting"). Once
the index lists every one in its state (asked of the index, which runs no event), it
times, over one kept HTTP connection as the operator, `repeats` requests of each:
- the first page of 100 completed instances (`?status=completed&limit=100`): the target,
  at most 50 ms;
- the first page of 100 waiting ones, and the same with `count=1` (every match counted);
- a page of 100 waiting ones newest first, 50 pages in (its cursor taken from the 50th;
  fewer with fewer instances).
Every guest call is counted (the Host's `_call`): the listing must make none. And the
cost of publishing: how many of the creation's events published, and the host's time in
each publish (ActorDb.publish and the settle's copy into the index), against the
events' own time; and, natively, a state write that changes no state (no host call).
Figures go to bench/results/listing.json.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.bench_workflows import WF, bench_wasm, wf_call
from bench.common import (
    COMPILED,
    SMOKE_HELP,
    fmt_us,
    print_table,
    probe_saw,
    save,
    scratch_dir,
    smoke_results,
    summary,
    timed,
)

TARGET_MS = 50.0
FAR = 10**15


class _Meter:
    """Time spent in a function, summed over threads (the GIL orders the additions)."""

    def __init__(self) -> None:
        self.ns = 0
        self.n = 0

    def wrap(self, owner: Any, name: str) -> None:
        real = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return real(*args, **kwargs)
            finally:
                self.ns += time.perf_counter_ns() - t0
                self.n += 1

        setattr(owner, name, timed)


def make_host(data: Path) -> Any:
    from wkhost.config import HostConfig
    from wkhost.core.host import Host

    class Counter:
        """The host's observer: counts every call into a guest, and the time they take."""

        calls = 0
        call_ns = 0

        def guest_call(self, ref: Any, export: str, wall_ns: int, fuel: int) -> None:
            self.calls += 1
            self.call_ns += wall_ns

        def host_function(self, interface: str, name: str, ns: int) -> None:
            pass

        def event_ended(self, ref: Any, kind: str, outcome: str, wall_ns: int) -> None:
            pass

    host = Host(HostConfig(data_dir=data, cache_dir=COMPILED), observer=Counter())
    host.add_class(WF, bench_wasm(), access="internal")
    host.start()
    return host


def serve_front_door(host: Any, token: str) -> tuple[int, Any]:
    """The front door's app on 127.0.0.1, in a thread of its own: (port, its loop)."""
    from aiohttp import web
    from wkhost.net.frontdoor import make_app

    loop = asyncio.new_event_loop()
    ready: list[int] = []

    async def start() -> None:
        runner = web.AppRunner(make_app(host, token))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ready.append(runner.addresses[0][1])

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    threading.Thread(target=run, daemon=True, name="bench-front-door").start()
    while not ready:
        time.sleep(0.01)
    return ready[0], loop


def create(host: Any, instances: int) -> float:
    """Start the instances (8 at a time); the seconds it took."""
    def start(i: int) -> None:
        inp = {"n": 3} if i % 10 == 0 else {"wake_at": FAR}
        wf_call(host, host.actor_ref(WF, f"i{i:05d}"), "start", {"input": inp})

    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(start, range(instances)))
    return time.monotonic() - t0


def settled(host: Any, instances: int, timeout_s: float = 600) -> dict[str, int]:
    """Wait until the index lists every instance in its resting state (asked of the
    index: no event)."""
    from wkhost.storage.listing import ListQuery

    want = {"completed": -(-instances // 10)}
    want["waiting"] = instances - want["completed"]
    end = time.monotonic() + timeout_s
    while True:
        got = {s: host.list_page(ListQuery(WF, (s,), limit=1), count=True)[1] for s in want}
        if got == want or time.monotonic() > end:
            return {k: int(v or 0) for k, v in got.items()}
        time.sleep(0.5)


def timed_get(conn: http.client.HTTPConnection, token: str, path: str, repeats: int
              ) -> tuple[dict[str, float], dict[str, Any]]:
    samples = []
    doc: dict[str, Any] = {}
    for _ in range(repeats):
        t0 = time.perf_counter()
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        body = resp.read()
        samples.append((time.perf_counter() - t0) * 1e6)
        if resp.status != 200:
            raise RuntimeError(f"{path} answered {resp.status}: {body[:200]!r}")
        doc = json.loads(body)
    return summary(samples), doc


def cursor_at(conn: http.client.HTTPConnection, token: str, pages: int, page: int) -> str:
    """The cursor of the page after `pages` pages of `page` waiting ones, newest first."""
    after = ""
    for _ in range(pages):
        _, doc = timed_get(conn, token, f"/_wk/actors/{WF}?status=waiting&order=-updated"
                           f"&limit={page}&after={after}", 1)
        after = doc["next"]
    return after


def measure(host: Any, port: int, token: str, repeats: int, waiting: int,
            page: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    base = f"/_wk/actors/{WF}?limit={page}"
    pages = min(50, waiting // page - 1)
    later = cursor_at(conn, token, pages, page)
    calls0 = host.observer.calls
    rows: dict[str, Any] = {}
    for name, query in [("completed, first page", "&status=completed"),
                        ("waiting, first page", "&status=waiting"),
                        ("waiting, first page, counted", "&status=waiting&count=1"),
                        (f"waiting, newest first, page {pages + 1}",
                         f"&status=waiting&order=-updated&after={later}")]:
        stats, doc = timed_get(conn, token, base + query, repeats)
        status = "completed" if "completed" in query else "waiting"
        if len(doc["ids"]) != page or {a["status"] for a in doc["actors"]} != {status}:
            raise RuntimeError(f"{name}: not a page of {page} {status} ones: {doc['ids'][:5]}")
        rows[name] = {**stats, "count": doc["count"]}
    conn.close()
    return {"pages": rows, "events_during_listing": host.observer.calls - calls0}


def unchanged_publish() -> dict[str, float]:
    """What the runner pays for a state write that leaves the state as it was (most
    writes): the Publisher's comparison, and no host call (natively, on FakeBackend)."""
    from wkguest.workflow.core.publish import Publisher
    from wkguest.workflow.testing.fakes import FakeBackend

    backend = FakeBackend()
    publisher = Publisher(backend)
    publisher.state("waiting", 1)
    figs = timed(lambda: publisher.state("waiting", 2), 7, inner=100_000)
    assert backend.calls["publish"] == 1
    return figs


def run(instances: int, repeats: int, page: int = 100) -> dict[str, Any]:
    from wkhost.events.settle import Settle
    from wkhost.storage.actordb import ActorDb

    publishes, settles = _Meter(), _Meter()
    publishes.wrap(ActorDb, "publish")
    settles.wrap(Settle, "_publish")
    host = make_host(scratch_dir("wkbench-listing-"))
    try:
        created_s = create(host, instances)
        states = settled(host, instances)
        events, event_ns = host.observer.calls, host.observer.call_ns
        token = "bench-listing-token"
        port, loop = serve_front_door(host, token)
        figs = measure(host, port, token, repeats, states["waiting"], page)
        loop.call_soon_threadsafe(loop.stop)
    finally:
        host.close()
    # Each wraps a seam of the host: the events, the listing's "no event" and the cost of
    # publishing rest on them having seen the creation's calls.
    probe_saw("guest call (the Counter, the host's observer)", events)
    probe_saw("publish (the meter wraps ActorDb.publish)", publishes.n)
    probe_saw("copy into the index (the meter wraps Settle._publish)", settles.n)
    publish_us = (publishes.ns + settles.ns) / max(1, publishes.n) / 1000
    return {"publisher_unchanged_us": unchanged_publish()["median"],
            "instances": instances, "states": states, "created_s": created_s,
            "creation_events": events, "publishes": publishes.n,
            "host_us_per_publish": publish_us,
            "guest_call_us_mean": event_ns / max(1, events) / 1000, **figs,
            "page": page, "target_ms": TARGET_MS}


def report(figs: dict[str, Any]) -> bool:
    print_table(f"listing among {figs['instances']:,} instances ({figs['states']}), "
                f"a page of {figs['page']} through the front door",
                list(figs["pages"].items()))
    print(f"\n  events during the listing: {figs['events_during_listing']} "
          f"(guest calls counted by the host)")
    print(f"  creation: {figs['created_s']:.1f} s, {figs['creation_events']:,} guest calls, "
          f"{figs['publishes']:,} publishes, {fmt_us(figs['host_us_per_publish'])} of host "
          f"time each (a guest call: {fmt_us(figs['guest_call_us_mean'])} on average)")
    print(f"  a state write that changes no state: {fmt_us(figs['publisher_unchanged_us'])} "
          f"in the Publisher, no host call")
    first = figs["pages"]["completed, first page"]["median"] / 1000
    met = first <= TARGET_MS and figs["events_during_listing"] == 0
    print(f"  target: the first page of {figs['page']} with a status filter in at most "
          f"{TARGET_MS:.0f} ms, no event: {first:.2f} ms, {'met' if met else 'NOT met'}")
    return met


def main(argv: list[str] | None = None) -> bool:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--instances", type=int, default=10_000, help="instances (10,000)")
    p.add_argument("--repeats", type=int, default=50, help="timed requests of each (50)")
    p.add_argument("--quick", action="store_true", help="--repeats 10")
    p.add_argument("--page", type=int, default=100, help="a page's size (100)")
    p.add_argument("--smoke", action="store_true",
                   help=SMOKE_HELP + " (--instances 200 --page 10 --repeats 1); its exit "
                   "status says whether the listing ran no event, not whether it was fast")
    args = p.parse_args(argv)
    if args.smoke:
        smoke_results()
        args.instances, args.page, args.repeats = 200, 10, 1
    if args.page < 1 or args.instances < 10 * args.page or args.repeats < 1:
        p.error("--instances takes at least 10 pages (--page), --repeats at least 1")
    figs = run(args.instances, 10 if args.quick else args.repeats, args.page)
    met = bool(report(figs))
    print(f"  saved to {save('listing', figs)}")
    return bool(figs["events_during_listing"] == 0) if args.smoke else met


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
