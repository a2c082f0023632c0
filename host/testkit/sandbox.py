"""The kit's sandbox: the same test against the real built components.

`Sandbox` builds each app with `wkhost build`'s cache, serves them with `wkhost serve
--fake-clock --fetch-via ...` on 127.0.0.1 (one process, the kit's start time), and
answers the actors' fetches with the test's handlers from a server of its own
(fetch_server.py). Time moves by the host's clock route, which waits until what came due
has run; requests go through the front door as an operator's or the public's.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from wkguest.types import Response

from ..engine.build import cached_build
from ..engine.build_cache import default_cache_dir
from .fetch_server import FetchServer
from .guest import Fetch
from .local import START_MS

SETTLE_MS = 20_000  # how long a clock move waits at most for what came due
START_TIMEOUT_S = 120.0  # a first start compiles each component (seconds each)


def listening_url(proc: subprocess.Popen[str], log: list[str], timeout_s: float) -> str:
    """The URL `wkhost serve` says it listens on (its stdout's banner line), once it says
    it. Raises RuntimeError, with the end of `log` (its stderr's lines), if it exits
    first or says nothing in `timeout_s`."""
    end = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("wkhost serve exited early:\n" + "\n".join(log[-30:]))
        if "listening on " in line:
            return line.strip().split("listening on ", 1)[1]
    raise RuntimeError("wkhost serve did not start in time")


class Sandbox:
    """Real components in `wkhost serve` (see the module's doc)."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = dict(env or {})  # the server's first start's own (a restart drops it)
        self.apps: dict[str, tuple[Path, bool]] = {}
        self.fetches = FetchServer()
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.log: list[str] = []
        self._now = START_MS
        self._next: int | None = None

    def serve(self, cls: str, app: str | Path, internal: bool = False) -> None:
        path = Path(app).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no app at {app}: give the path of its .py file "
                                    "(or of a component built from it, .wasm)")
        self.apps[cls] = (path, internal)

    def on_fetch(self, prefix: str, handler: Callable[[Fetch], Response]) -> None:
        self.fetches.handlers.append((prefix, handler))

    def start(self) -> None:
        cache = Path(os.environ.get("WKHOST_CACHE_DIR") or default_cache_dir())
        self._cmd = [sys.executable, "-m", "wkhost.cli", "serve", "--port", "0",
                     "--processes", "1", "--data", str(self.root / "data"), "--fake-clock",
                     "--fake-clock-start", str(START_MS), "--fetch-via", self.fetches.start()]
        for cls, (app, internal) in self.apps.items():
            built = app if app.suffix == ".wasm" else cached_build(app, cache)
            self._cmd += ["--actor", f"{cls}={built}"]
            if internal:
                self._cmd += ["--access", f"{cls}=internal"]
        self._launch({**os.environ, **self.env})

    def restart(self) -> None:
        """A new server on the same data, after this one stopped (or was killed: SIGKILL
        if it is still running), without the first start's own environment."""
        self._stop(kill=True)
        self._launch(dict(os.environ))

    def stopped(self, wait_s: float = 5.0) -> bool:
        """Whether the server's process has ended (a crash point killed it, say), given
        `wait_s` to end: its sockets close a moment before it can be reaped."""
        if self.proc is None:
            return False
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def _launch(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(self._cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        self.url = listening_url(self.proc, self.log, START_TIMEOUT_S)
        self._token = (self.root / "data" / "_host" / "admin-token").read_text().strip()

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            for line in proc.stderr:
                self.log.append(line.rstrip("\n"))

    # -- requests ---------------------------------------------------------------------
    def _http(self, method: str, path: str, body: bytes | None, operator: bool
              ) -> tuple[int, list[tuple[str, str]], bytes]:
        req = urllib.request.Request(self.url + path, data=body, method=method)
        if operator:
            req.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, timeout=SETTLE_MS / 1000 + 30) as resp:
                return resp.status, list(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, list(e.headers.items()), e.read()

    def request(self, cls: str, id: str, method: str, path: str, body: bytes = b"",
                sender: str = "operator", query: str = "") -> Response:
        target = f"/{cls}/{quote(id, safe='')}{path}" + (f"?{query}" if query else "")
        status, headers, data = self._http(method, target, body or None,
                                           sender == "operator")
        return Response(status, headers, data)

    # -- time ----------------------------------------------------------------------------
    def _advance(self, ms: int) -> None:
        status, _, data = self._http("POST", f"/_wk/clock/advance?ms={ms}&settle_ms="
                                     f"{SETTLE_MS}", b"", True)
        if status != 200:
            raise RuntimeError(f"the host's clock did not move: {status} {data[:200]!r}")
        doc = json.loads(data)
        if not doc.get("settled", True):
            raise RuntimeError(f"alarms still due {SETTLE_MS} ms after the clock moved: "
                               "does a run never wait?")
        self._now, self._next = int(doc["now"]), doc.get("next_alarm")

    def now(self) -> int:
        return self._now

    def run_due(self) -> int:
        self._advance(0)
        return 0

    def next_alarm(self) -> int | None:
        self._advance(0)
        return self._next

    def skip_to(self, ms: int) -> None:
        self._advance(max(0, ms - self._now))

    def close(self) -> None:
        self._stop(kill=False)
        self.fetches.stop()

    def _stop(self, kill: bool) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()
