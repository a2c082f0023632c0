"""WKHOST_METRICS=off (host/metrics.py), bench/bench_observe.py's metrics-off side: a real
host's event and host call leave the hot path's tallies empty, and without it fill them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .support import COMPILED

# In a process of its own: the switch is read once, as wkhost.metrics is imported.
COUNT_AN_EVENT = """
import json, sys, tempfile
from pathlib import Path
from wkhost import metrics
from wkhost.config import HostConfig
from wkhost.core.host import Host
from wkhost.types import Request, Sender

data = Path(tempfile.mkdtemp())
host = Host(HostConfig(data_dir=data, cache_dir=Path(sys.argv[2])))
host.add_class("probe", Path(sys.argv[1]))
host.start()
try:
    resp = host.request(host.actor_ref("probe", "one"), Request("GET", "/now", "", [], b""),
                        Sender.operator())
    assert resp.status == 200, resp.body
finally:
    host.close()
print(json.dumps({"on": metrics.ON, "events": len(metrics.EVENT_TIMES.totals()),
                  "host_calls": len(metrics.HOST_CALL_TIMES.totals())}))
"""


def tallied(probe_wasm: Path, setting: str | None) -> dict[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "WKHOST_METRICS"}
    if setting is not None:
        env["WKHOST_METRICS"] = setting
    out = subprocess.run([sys.executable, "-c", COUNT_AN_EVENT, str(probe_wasm), str(COMPILED)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    doc: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return doc


def test_metrics_off_leaves_the_tallies_empty(probe_wasm: Path) -> None:
    assert tallied(probe_wasm, "off") == {"on": False, "events": 0, "host_calls": 0}


def test_metrics_are_on_by_default(probe_wasm: Path) -> None:
    on = tallied(probe_wasm, None)
    assert on["on"] is True
    assert on["events"] >= 1 and on["host_calls"] >= 1
