"""Start a real `wkhost serve` for a benchmark, on 127.0.0.1 with a fresh data dir."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from bench.common import COMPILED, REPO, scratch_dir


class BenchServer:
    def __init__(self, actors: dict[str, Path], extra: list[str] | None = None) -> None:
        self.data = scratch_dir("wkbench-serve-")
        cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0", "--data",
               str(self.data), "--cache-dir", str(COMPILED), "--log-level", "warning"]
        for name, wasm in actors.items():
            cmd += ["--actor", f"{name}={wasm}"]
        if "--processes" not in (extra or []):
            # One process, as the benchmarks measured before `auto` was the default: a
            # bench of the default as users run it says `--processes auto`.
            cmd += ["--processes", "1"]
        self.proc = subprocess.Popen(cmd + (extra or []), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=REPO)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "listening on " in line:
                self.url = line.strip().split("listening on ", 1)[1]
                break
        else:
            raise RuntimeError("wkhost serve did not start")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    @property
    def token(self) -> str:
        return (self.data / "_host" / "admin-token").read_text().strip()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        # self.data is a scratch_dir: it goes with the others (bench.common)
