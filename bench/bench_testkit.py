"""The test kit (wkhost.testkit): what a three-step workflow's test costs on plain CPython,
beside the same test against the real built component (the kit's sandbox: `wkhost serve
--fake-clock`), in one run.

    .venv/bin/python -m bench.bench_testkit [--tests 200] [--smoke]

A test is what a user's test does: start instance `t-N` of the bench class (examples/bench,
{"n": 3}: three steps), wait for it to complete, read its output. Measured three ways:
- CPython, a fresh kit each test (the `wk_kit` fixture: a kit, the app served, the test,
  the kit closed); the bindings and the app's import are the process's, paid once;
- CPython, one kit for every test;
- the sandbox, one kit (its server's start, with the component built and compiled
  already, is reported apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from wkhost.testkit import Kit, WorkflowClass

from .common import REPO, example_wasm, print_table, save, summary

APP = REPO / "examples" / "bench" / "app.py"


def one_test(wfbench: WorkflowClass, i: int) -> float:
    """One test's time (µs)."""
    started = time.perf_counter()
    inst = wfbench.instance(f"t-{i}")
    inst.start({"n": 3})
    st = inst.wait_for_status("completed")
    assert st.output == {"steps": 3}, st
    return (time.perf_counter() - started) * 1e6


def fresh_kits(n: int) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        with Kit(sandbox=False) as kit:
            one_test(kit.serve_workflow("wfbench", APP), i)
        out.append((time.perf_counter() - started) * 1e6)
    return out


def one_kit(n: int, sandbox: bool) -> tuple[list[float], float]:
    """Per-test times on one kit, and the kit's start (µs)."""
    with Kit(sandbox=sandbox) as kit:
        wfbench = kit.serve_workflow("wfbench", APP)
        started = time.perf_counter()
        kit.now()  # starts it: the sandbox's server
        start_us = (time.perf_counter() - started) * 1e6
        return [one_test(wfbench, i) for i in range(n)], start_us


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tests", type=int, default=200, help="tests per way (default 200)")
    p.add_argument("--smoke", action="store_true", help="a smoke run (make test): 3 tests")
    args = p.parse_args(argv)
    n = 3 if args.smoke else args.tests
    example_wasm("bench")  # built before any timing, where the sandbox's start finds it
    os.environ.setdefault("WKHOST_CACHE_DIR", str(REPO / ".cache" / "components"))
    fresh_kits(2)  # the process's one-off costs: the bindings, the app's import
    fresh = fresh_kits(n)
    shared, _ = one_kit(n, sandbox=False)
    boxed, box_start = one_kit(max(3, n // 4), sandbox=True)
    rows = [("CPython, a fresh kit per test", summary(fresh)),
            ("CPython, one kit", summary(shared)),
            ("sandbox (wkhost serve --fake-clock), one kit", summary(boxed))]
    print_table("a three-step workflow's test (start, wait for completed, read output)",
                rows)
    ratio = statistics.median(boxed) / statistics.median(fresh)
    print(f"\n  the sandbox's test takes {ratio:.1f}x the CPython one's (fresh kit); "
          f"its server started in {box_start / 1e6:.2f} s")
    path = save("testkit", {name: s for name, s in rows}
                | {"sandbox_start_us": box_start, "x_sandbox": ratio})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
