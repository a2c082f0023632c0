"""Every bench module's smoke run (`--smoke`), so that a benchmark that no longer runs fails
here, in `make test`, and not on the day someone runs `make bench`.

Each runs as `python -m bench.MODULE --smoke` in a process of its own, its figures into
this test's directory (never bench/results/); it must exit 0, write its figures, and
count no failed request. bench_workflows (every part, the sleepers too) runs under
`python -m bench --smoke --only bench_workflows,peers`, which also takes the peers (when
installed: `make bench-peers`; else skipped with one line, the wkhost side run all the
same), the combined table and the comparison with the last saved run. Nothing here
asserts a speed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import MODULES
from bench.common import REPO, RESULTS, RESULTS_ENV

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Each module's figures: the files its smoke run writes (profile_workflows and
# bench_metrics_cost print theirs).
WRITES = {"bench_core": ["core"], "calibrate_fuel": ["fuel"], "bench_frontdoor": ["frontdoor"],
          "bench_conversion": ["conversion"], "bench_hostile": ["bench_hostile"],
          "bench_continue": ["continue"], "bench_groups": ["groups"],
          "bench_overlap": ["overlap"], "bench_updates": ["updates"],
          "bench_json": ["json"],
          "bench_listing": ["listing"], "bench_observe": ["observe"], "bench_memory": ["memory"],
          "bench_cluster": ["cluster"], "bench_testkit": ["testkit"], "soak": ["soak"],
          "profile_workflows": [],
          "bench_metrics_cost": []}
BY_THE_RUNNER = ("bench_workflows",)  # run by test_the_runner_s_smoke
TIMEOUT_S = 280


def _make_targets() -> set[str]:
    """The bench modules the Makefile's targets run (`-m bench.X`)."""
    return set(re.findall(r"-m bench\.(\w+)", (REPO / "Makefile").read_text()))


# What a module prints of each file it saved (bench.common.save's callers, soak's report).
SAVED = re.compile(r"(?:saved (?:to )?|results in )(\S+\.json)")


def smoke(args: list[str], results: Path) -> str:
    """Run `python -m ARGS` with its figures into `results`; its output (it must exit 0,
    and every file it says it saved must be there, none in bench/results/: other runs
    may write there meanwhile, so its own word is what is checked)."""
    env = {**os.environ, RESULTS_ENV: str(results)}
    proc = subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
    print(proc.stdout)
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}:\n" \
                                 + "\n".join(proc.stdout.splitlines()[-30:])
    for saved in SAVED.findall(proc.stdout):
        path = Path(saved).resolve()
        assert path.is_relative_to(results.resolve()), f"saved {path}, outside {results}"
        assert RESULTS.resolve() not in path.parents
    return proc.stdout


def failures(doc: Any, where: str = "") -> list[str]:
    """Every nonzero `failures` count in a figures document (requests that failed)."""
    found: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "failures" and isinstance(v, int | float) and v:
                found.append(f"{where}: {v}")
            found += failures(v, f"{where}/{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += failures(v, f"{where}[{i}]")
    return found


def figures(results: Path, name: str) -> dict[str, Any]:
    path = results / f"{name}.json"
    assert path.is_file(), f"no {path.name} written"
    doc: dict[str, Any] = json.loads(path.read_text())["figures"] if name != "soak" else \
        json.loads(path.read_text())
    assert doc, f"{path.name} holds no figures"
    assert not failures(doc), f"{path.name}: failed requests {failures(doc)}"
    return doc


def peers_available() -> dict[str, str | None]:
    from bench.peers import available

    return available()


def test_every_module_of_make_bench_and_of_the_make_targets_has_a_smoke_run() -> None:
    assert set(MODULES) | _make_targets() <= set(WRITES) | set(BY_THE_RUNNER)


@pytest.mark.parametrize("module", sorted(WRITES))
def test_smoke(module: str, tmp_path: Path) -> None:
    if module == "profile_workflows" and shutil.which("perf") is None:
        pytest.skip("perf is not installed (Debian: linux-perf): make profile needs it")
    smoke([f"bench.{module}", "--smoke"], tmp_path)
    docs = {name: figures(tmp_path, name) for name in WRITES[module]}
    if module == "bench_groups":  # its peers part: a peer installed must have run
        for name, why in peers_available().items():
            ran = docs["groups"]["peers"][name]
            assert why is not None or "skipped" not in ran, f"{name}: {ran}"


def test_the_runner_s_smoke_with_bench_workflows_and_the_peers(tmp_path: Path) -> None:
    out = smoke(["bench", "--smoke", "--only", "bench_workflows,peers"], tmp_path)
    workflows = figures(tmp_path, "workflows")
    assert set(workflows) >= {"replay", "step", "throughput", "big", "cold", "drain"}
    assert figures(tmp_path, "sleepers")["sleepers"]["count"] > 0
    latest = figures(tmp_path, "latest")
    assert latest["exit_codes"] == {"bench_workflows": 0, "sleepers": 0}
    rows = {r["workload"]: r for r in latest["combined"]}
    assert rows["three-step workflows/s, concurrency 32"]["wkhost"]["median"] > 0
    for name, why in peers_available().items():
        ran = latest["peers"][name]
        if why is not None:  # not installed: one line said so, and wkhost ran all the same
            print(f"{name}: skipped ({why})")
            assert f"{name}: skipped" in out
        else:
            assert "skipped" not in ran, f"{name} is installed but did not run: {ran}"
            assert rows["three-step workflows/s, concurrency 32"][f"x_{name}"] > 0
    if (RESULTS / "latest.json").is_file():
        assert "fell by more than this run's spread" in out
