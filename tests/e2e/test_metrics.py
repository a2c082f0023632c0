"""Prometheus metrics at /_wk/metrics on a real `wkhost serve`: the figures move as the
example order workflow runs (events by outcome, a trap, host calls by interface, fsyncs,
alarms, instances by status), the budgets' cuts are told apart, operators only, and with
`--processes 2` the figures are the sums of both processes'."""

from __future__ import annotations

import http.client
import re
import socket
from pathlib import Path
from typing import Any

from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client.parser import text_string_to_metric_families
from wkhost.engine.components import FUEL_PER_MS
from wkhost.partition import Partition

from . import workflow_support
from .conftest import MakeServer
from .server import Server
from .workflow_support import HOUR, INTERNAL, ORDER, Shop, finished, waiting_for

workflow_wasm = workflow_support.workflow_wasm  # the fixture, by name

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str, parser: Any = text_string_to_metric_families) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in parser(text) for s in fam.samples}


def scrape(server: Server) -> Samples:
    status, headers, body = server.request("GET", "/_wk/metrics", operator=True)
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers
    return parse(body.decode())


def value(m: Samples, name: str, **labels: str) -> float:
    """The sum of the samples named `name` whose labels include `labels` (0: none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in m.items() if n == name and want <= ls)


def events(m: Samples, cls: str, outcome: str) -> float:
    return value(m, "wkhost_events_total", **{"class": cls, "outcome": outcome})


def calls(m: Samples, interface: str) -> float:
    return value(m, "wkhost_host_call_duration_seconds_count", interface=interface)


def instances(m: Samples, status: str) -> float:
    return value(m, "wkhost_actors_by_status", **{"class": "orders", "status": status})


def serve(make_server: MakeServer, wasm: dict[str, Path], probe: Path, data: Path,
          extra: list[str]) -> Shop:
    actors = {"orders": wasm["orders"], "ledger": wasm["ledger"], "app": wasm["app"],
              "probe": probe}
    return Shop(make_server(actors=actors, access=INTERNAL, data=data, extra=extra))


def test_the_figures_move_as_an_order_runs(make_server: MakeServer, probe_wasm: Path,
                                           workflow_wasm: dict[str, Path],
                                           tmp_path: Path) -> None:
    shop = serve(make_server, workflow_wasm, probe_wasm, tmp_path / "data", [])
    before = scrape(shop.server)
    assert value(before, "wkhost_processes") == 1
    assert value(before, "wkhost_resident_memory_bytes") > 10 << 20
    assert events(before, "orders", "ok") == 0 and instances(before, "waiting") == 0

    shop.app_start("o1", trap_in_pack=True, cool_off_ms=HOUR)
    shop.drive("o1", waiting_for("approved"))
    waiting = scrape(shop.server)
    assert events(waiting, "orders", "trap") == 1  # pack's first attempt, nothing else
    assert events(waiting, "orders", "ok") >= 3
    assert events(waiting, "app", "ok") == 1
    assert value(waiting, "wkhost_event_duration_seconds_count", **{"class": "orders"}) \
        == value(waiting, "wkhost_events_total", **{"class": "orders"})
    assert value(waiting, "wkhost_event_fuel_units_count", **{"class": "orders"}) >= 3
    assert calls(waiting, "actors") >= 3  # app -> orders, orders -> ledger (reserve, pack)
    assert calls(waiting, "sqlite") > calls(before, "sqlite")
    assert calls(waiting, "alarm") >= 1
    assert value(waiting, "wkhost_fsyncs_total", file="wal") >= 3  # each recorded step
    assert value(waiting, "wkhost_alarm_lateness_seconds_count") >= 2  # retry, cool-off
    assert value(waiting, "wkhost_alarms_pending") == 1  # the wait's timeout
    assert instances(waiting, "waiting") == 1 and instances(waiting, "completed") == 0

    assert shop.approve("o1")[0] == 200
    shop.drive("o1", finished)
    done = scrape(shop.server)
    assert instances(done, "waiting") == 0 and instances(done, "completed") == 1
    assert events(done, "orders", "ok") > events(waiting, "orders", "ok")
    assert calls(done, "actors") > calls(waiting, "actors")
    assert value(done, "wkhost_fsyncs_total", file="wal") \
        > value(waiting, "wkhost_fsyncs_total", file="wal")
    assert events(done, "orders", "trap") == 1
    # What the workflow runner counts (wkguest_workflow_*: core/counted.py): one run,
    # completed, whose pack was retried once after its trap; each step's attempts.
    orders = {"class": "orders"}
    assert value(done, "wkguest_workflow_started_total", **orders) == 1
    assert value(done, "wkguest_workflow_finished_total", **orders, state="completed") == 1
    assert value(done, "wkguest_workflow_finished_total", **orders, state="failed") == 0
    assert value(done, "wkguest_workflow_step_retries_total", **orders) == 1
    assert value(done, "wkguest_workflow_step_retries_total", **orders, step="pack") == 1
    assert value(done, "wkguest_workflow_step_attempts_sum", **orders, step="pack") == 2
    assert value(done, "wkguest_workflow_step_attempts_count", **orders) \
        == value(done, "wkguest_workflow_step_duration_seconds_count", **orders)
    for name in ("wkhost_events_total", "wkhost_host_call_duration_seconds_count"):
        assert not any(("id", "o1") in ls for (n, ls) in done if n == name)


def test_the_budgets_cuts_are_counted_apart(make_server: MakeServer, probe_wasm: Path,
                                            tmp_path: Path) -> None:
    server = make_server(actors={"probe": probe_wasm},
                         extra=["--memory-mb", "64", "--cpu-budget-ms", "200"])
    assert server.request("POST", "/probe/a/alloc?mb=200", b"")[0] == 500
    assert server.request("POST", "/probe/b/spin", b"")[0] == 503
    assert server.request("POST", "/probe/c/trap", b"")[0] == 500
    assert server.request("POST", "/probe/d/alloc?mb=1", b"")[0] == 200
    m = scrape(server)
    got = {o: events(m, "probe", o) for o in ("ok", "trap", "cpu_cut", "memory_cap",
                                             "wall_cut", "error")}
    # Each actor's first event creates it (on-init, then the request): one event each.
    assert got == {"ok": 1, "trap": 1, "cpu_cut": 1, "memory_cap": 1, "wall_cut": 0,
                   "error": 0}, got
    assert value(m, "wkhost_event_fuel_units_count", **{"class": "probe"}) == 4
    # The CPU cut burned its whole budget (and its on-init some more).
    assert value(m, "wkhost_event_fuel_units_sum", **{"class": "probe"}) > 200 * FUEL_PER_MS


def test_metrics_are_for_operators(server: Server) -> None:
    status, _, body = server.request("GET", "/_wk/metrics")
    assert status == 403 and b"send a token" in body
    status, _, _ = server.request("GET", "/_wk/metrics",
                                  headers={"Authorization": "Bearer not-the-token"})
    assert status == 401


def peer_text(server: Server, process: int) -> str:
    """One process's own figures, asked on its Unix socket as the other process would."""
    path = Partition(process, 2).socket_of(server.data, process)
    conn = http.client.HTTPConnection("localhost", timeout=30)
    conn.sock = socket.socket(socket.AF_UNIX)
    conn.sock.settimeout(30)
    conn.sock.connect(str(path))
    try:
        conn.request("GET", "/_wk/peer/metrics")
        resp = conn.getresponse()
        assert resp.status == 200
        return resp.read().decode()
    finally:
        conn.close()


def test_with_two_processes_the_figures_are_their_sums(
        make_server: MakeServer, probe_wasm: Path, workflow_wasm: dict[str, Path],
        tmp_path: Path) -> None:
    shop = serve(make_server, workflow_wasm, probe_wasm, tmp_path / "data",
                 ["--processes", "2"])
    ids = [f"o{i}" for i in range(6)]  # both processes own some (host/partition.py)
    assert {Partition(0, 2).owner(i) for i in ids} == {0, 1}
    for oid in ids:
        shop.server.actor("app", "web", "POST", f"/orders/{oid}",
                          {**ORDER, "cool_off_ms": HOUR}, operator=False)
    for oid in ids:
        shop.drive(oid, waiting_for("approved"))
    total = scrape(shop.server)
    parts = [parse(peer_text(shop.server, k), openmetrics_parser.text_string_to_metric_families)
             for k in (0, 1)]
    assert value(total, "wkhost_processes") == 2
    assert instances(total, "waiting") == 6
    assert all(0 < instances(p, "waiting") < 6 for p in parts)
    for name, labels in (("wkhost_events_total", {"class": "orders", "outcome": "ok"}),
                         ("wkhost_host_call_duration_seconds_count", {"interface": "actors"}),
                         ("wkhost_fsyncs_total", {"file": "wal"}),
                         ("wkhost_alarms_pending", {}),
                         ("wkhost_actors_by_status", {"status": "waiting"})):
        each = [value(p, name, **labels) for p in parts]
        assert all(n > 0 for n in each), (name, each)
        assert value(total, name, **labels) == sum(each), (name, each)


def test_every_family_parses_as_openmetrics_with_its_unit(server: Server) -> None:
    """Asked for OpenMetrics, the scrape parses with prometheus_client's strict parser;
    every name is Prometheus's (snake case, a counter's `_total`, a unit as the name's
    last word and declared), and the process's and build's figures are there."""
    assert server.request("GET", "/probe/a/echo")[0] == 200
    status, headers, body = server.request(
        "GET", "/_wk/metrics", operator=True,
        headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert status == 200 and headers["Content-Type"].startswith(
        "application/openmetrics-text; version=1.0.0"), headers
    families = {f.name: f for f in openmetrics_parser.text_string_to_metric_families(
        body.decode())}
    for name, fam in families.items():
        assert re.fullmatch(r"(wkhost|wkguest|process)_[a-z0-9_]+", name), name
        for unit in ("seconds", "bytes", "units"):
            assert (fam.unit == unit) == name.endswith("_" + unit), (name, fam.unit)
        if fam.type == "counter":
            assert all(s.name in (name + "_total", name + "_created")
                       for s in fam.samples), name
    assert "wkhost_instances" not in families and "wkhost_event_fuel" not in families
    assert families["wkhost_event_fuel_units"].samples  # wkhost_actors_by_status: above
    assert families["wkhost_wasm_instances"].samples[0].value >= 1
    (build,) = families["wkhost_build_info"].samples
    assert set(build.labels) == {"process", "version", "python", "wasmtime"}
    cpu = families["process_cpu_seconds"]
    assert cpu.type == "counter" and cpu.samples[0].labels == {"process": "0"}
    assert families["process_resident_memory_bytes"].samples[0].value > 10 << 20
