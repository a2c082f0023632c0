"""A real `wkhost serve` subprocess on 127.0.0.1, and a small client for the tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wkhost.testkit.sandbox import listening_url

REPO = Path(__file__).resolve().parents[2]
COMPILED = REPO / ".cache" / "compiled"
# How long a clock move waits at most for the alarms it made due: a bound for a guest
# that re-arms its alarm to "now" for ever, far above what any delivery takes.
SETTLE_MS = 20_000


class Server:
    def __init__(self, data: Path, actors: dict[str, Path], extra: list[str] | None = None,
                 access: dict[str, str] | None = None, env: dict[str, str] | None = None,
                 log_level: str = "info") -> None:
        self.data = data
        self.actors = actors
        self.extra = extra or []
        self.access = access or {}
        self.env = env  # the process's whole environment, when given
        self.log_level = log_level
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.log: list[str] = []

    # -- the process ------------------------------------------------------------------------
    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0", "--data",
               str(self.data), "--cache-dir", str(COMPILED), "--fake-clock",
               "--log-level", self.log_level]
        for name, wasm in self.actors.items():
            cmd += ["--actor", f"{name}={wasm}"]
        for name, level in self.access.items():
            cmd += ["--access", f"{name}={level}"]
        if "--processes" not in self.extra:
            # One process unless a test asks for more: `auto` (the default) would start
            # one a core, which a test of one process's behaviour does not want, and the
            # suite's time would pay for.
            cmd += ["--processes", "1"]
        return cmd + self.extra

    def start(self, timeout: float = 60) -> Server:
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=REPO, env=self.env)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.url = listening_url(self.proc, self.log, timeout)
        return self

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        try:
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))
        except (OSError, ValueError):  # the pipe was closed under us at stop
            pass

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self._close_pipes()

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._close_pipes()

    def _close_pipes(self) -> None:
        assert self.proc is not None
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()

    @property
    def token(self) -> str:
        return (self.data / "_host" / "admin-token").read_text().strip()

    def events_run(self) -> float:
        """Every event the server's actors have run, by its metrics."""
        from prometheus_client.parser import text_string_to_metric_families

        status, _, body = self.request("GET", "/_wk/metrics", operator=True)
        assert status == 200, body
        return sum(s.value for fam in text_string_to_metric_families(body.decode())
                   for s in fam.samples if s.name == "wkhost_events_total")

    # -- requests ---------------------------------------------------------------------------
    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, operator: bool = False,
                timeout: float = 60) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(self.url + path, data=body, method=method)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        if operator:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def actor(self, cls: str, actor_id: str, method: str, path: str, payload: Any = None,
              query: str = "", operator: bool = True, **kw: Any) -> tuple[int, Any]:
        body = None if payload is None else json.dumps(payload).encode()
        url = f"/{cls}/{quote(actor_id, safe='')}{path}" + (f"?{query}" if query else "")
        status, _, data = self.request(method, url, body, operator=operator, **kw)
        try:
            return status, json.loads(data)
        except ValueError:
            return status, data.decode(errors="replace")

    def advance(self, ms: int, settle_ms: int = SETTLE_MS) -> int:
        """Move the test clock, then wait (up to `settle_ms`) until the alarms that came
        due have been delivered, so that what the test reads next has seen them."""
        status, _, data = self.request(
            "POST", f"/_wk/clock/advance?ms={ms}&settle_ms={settle_ms}", b"", operator=True)
        assert status == 200, data
        return int(json.loads(data)["now"])
