"""`wkhost serve --processes N`: N host processes behind one listening socket.

The supervisor (this process) makes the listening socket, the admin token and the
compiled components' cache entries once, then starts N copies of `wkhost serve` with
the same arguments, each told which process it is (`--process K/N`) and handed the
socket. Each accepts clients on it and serves the actors it owns (host/partition.py),
passing the others on (host/net/peers.py).

- "listening on" is printed once every process is ready.
- A process that dies is started again (after 1 s, doubling up to 30 s while it keeps
  dying within a minute); meanwhile its actors' requests get 503 with Retry-After. Its
  actors lose nothing: their databases are the truth, and the process rebuilds its index
  after an unclean stop, as one host does.
- The supervisor holds the data directory's lock (host/net/data_lock.py) and hands it
  to each process it starts: another server on the same data directory is refused, and
  so is a process started by hand.
- SIGTERM or SIGINT stops every process cleanly (each lets its running events finish),
  then the supervisor. The processes stop by themselves if the supervisor is killed.
- Each process runs on its own share of the cores (`--cpu-affinity auto`, the default;
  host/net/cores.py).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..config import HostConfig
from ..engine.components import compile_classes, make_engine
from ..storage import paths
from ..storage.files import make_dirs
from ..storage.index import prepare_layout
from .connections import reserve_address
from .cores import core_shares_here
from .serve import ServeOptions, admin_token, say_listening

log = logging.getLogger("wkhost.supervisor")

MAX_PROCESSES = 64
_BACKLOG = 1024
# A process compiles nothing (the supervisor has), but a loaded machine may be slow to
# import and load.
_READY_TIMEOUT_S = 300.0
_RESTART_MIN_S = 1.0
_RESTART_MAX_S = 30.0
# The longest the supervisor sleeps between looks at its processes when nothing woke it.
_LOOK_S = 5.0
_PR_SET_PDEATHSIG = 1


def supervise(config: HostConfig, opts: ServeOptions, processes: int, argv: list[str],
              lock_fd: int, pin_cores: bool = True,
              bound: list[socket.socket] | None = None) -> int:
    """Run `processes` copies of `wkhost serve argv...` until a signal. Returns the exit
    code: 0 after a clean stop. `lock_fd`: the data directory's lock, which this process
    holds (host/net/data_lock.py); each process is handed it, and so holds it too, as
    long as it runs. With `pin_cores`, each runs on its own share of the cores
    this process may use, if there are enough of them (`core_shares`). `bound`: the
    sockets `reserve_address` bound for opts.host:port (default: bound here); the
    processes share the first."""
    listen, token_path = _prepare(config, opts, processes, bound)
    clock_start = _clock_start(opts)
    shares = core_shares_here(processes) if pin_cores else None
    # Set by a signal and by a process that exited: the supervisor sleeps until then
    # (an idle server wakes for nothing), or until a restart is due.
    attention = threading.Event()
    procs = [_Process(k, processes, argv, (listen.fileno(), lock_fd), clock_start,
                      shares[k] if shares else None, attention)
             for k in range(processes)]
    stopping = _stop_on_signal(attention)
    try:
        if not _start(procs, stopping):
            return 1
        if not stopping.is_set():
            address = listen.getsockname()
            # As one process says it (net/serve.py), with how many: the default's line.
            log.info("serving %s on http://%s:%s with %d processes (admin token in %s)",
                     ", ".join(sorted(n for n, _ in opts.actors)), address[0], address[1],
                     processes, token_path)
            say_listening(address, config, token_path)
        while not stopping.is_set():
            attention.wait(_next_look(procs))
            attention.clear()
            for p in procs:
                p.restart_if_dead()
        return _stop(procs, opts.shutdown_timeout_s)
    finally:
        for p in procs:
            p.kill()
        listen.close()


def _prepare(config: HostConfig, opts: ServeOptions, processes: int,
             bound: list[socket.socket] | None) -> tuple[socket.socket, Path]:
    """What every process needs before the first starts; the listening socket, and where
    the admin token is."""
    listen = _listening_socket(bound or reserve_address(opts.host, opts.port))
    prepare_layout(config.data_dir, processes)
    # Made once, before any process reads it.
    _, token_path = admin_token(config, opts.admin_token_file)
    for name, _ in opts.actors:
        # Shared by every process (each owns some of the directories below it): made,
        # and its entry synced, before any process could find it half made.
        make_dirs(paths.class_dir(config.data_dir, name))
    _compile_once(config, opts)
    listen.listen(_BACKLOG)
    listen.set_inheritable(True)
    return listen, token_path


def _clock_start(opts: ServeOptions) -> int | None:
    """Where every process's fake clock starts: the time asked for, or now."""
    if not opts.fake_clock:
        return None
    return opts.fake_clock_start_ms or time.time_ns() // 1_000_000


def _next_look(procs: list[_Process]) -> float:
    """Seconds until a restart is due, or a while (a process's exit and a signal wake the
    supervisor sooner)."""
    now = time.monotonic()
    due = [p.restart_at - now for p in procs if p.restart_at is not None]
    return max(0.0, min(due)) if due else _LOOK_S


def _stop_on_signal(attention: threading.Event) -> threading.Event:
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        stopping.set()
        attention.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return stopping


def _start(procs: list[_Process], stopping: threading.Event) -> bool:
    """Start every process; False if one did not get ready (a signal is no failure)."""
    for p in procs:
        p.start()
    for p in procs:
        if not p.wait_ready(_READY_TIMEOUT_S, stopping) and not stopping.is_set():
            log.error("process %d of %d did not start", p.index, len(procs))
            return False
    return True


def _stop(procs: list[_Process], shutdown_timeout_s: float) -> int:
    # Also when a signal came while they started: each stops as it would later.
    log.info("stopping: every process lets its running events finish")
    for p in procs:
        p.terminate()
    codes = [p.wait(shutdown_timeout_s + 10) for p in procs]
    # A process still starting has no handler yet: SIGTERM ends it by default.
    return 0 if all(c in (0, -signal.SIGTERM) for c in codes) else 1


def _listening_socket(socks: list[socket.socket]) -> socket.socket:
    """The one socket every process accepts on: the first address's."""
    for other in socks[1:]:
        log.warning("--processes N listen on %s only, not on %s", socks[0].getsockname(),
                    other.getsockname())
        other.close()
    return socks[0]


def _compile_once(config: HostConfig, opts: ServeOptions) -> None:
    """Fill the compiled-component cache here, so that N processes do not each compile
    (and a file that is not a component is refused before any starts)."""
    compile_classes(make_engine(None), opts.actors, config.compile_cache())


class _Process:
    def __init__(self, index: int, count: int, argv: list[str], fds: tuple[int, int],
                 clock_start: int | None, cores: list[int] | None,
                 attention: threading.Event) -> None:
        """`fds`: the listening socket's and the data directory lock's descriptors;
        `attention`: set once the process has exited."""
        self.index = index
        listen_fd, lock_fd = fds
        self.cmd = [sys.executable, "-m", "wkhost.cli", *argv, "--process",
                    f"{index}/{count}", "--listen-fd", str(listen_fd), "--lock-fd",
                    str(lock_fd), "--supervisor-pid", str(os.getpid())]
        if clock_start is not None:
            self.cmd += ["--fake-clock-start", str(clock_start)]
        if cores is not None:
            self.cmd += ["--cores", ",".join(map(str, cores))]
        self.fds = fds
        self.proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._started_at = 0.0
        self._delay = _RESTART_MIN_S
        self.restart_at: float | None = None
        self._attention = attention

    def start(self) -> None:
        self._ready.clear()
        self._started_at = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, pass_fds=self.fds,
                                     stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._relay, args=(self.proc,), daemon=True,
                         name=f"wk-process-{self.index}").start()

    def _relay(self, proc: subprocess.Popen[str]) -> None:
        """The process's stdout, to ours, after its ready line (which only we read)."""
        assert proc.stdout is not None
        for line in proc.stdout:
            if " ready" in line and line.startswith("wkhost: process "):
                self._ready.set()
            else:
                sys.stdout.write(line)
                sys.stdout.flush()
        proc.wait()  # its stdout closed as it exited: its exit code, then the supervisor
        self._attention.set()

    def wait_ready(self, timeout: float, stopping: threading.Event) -> bool:
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.1):
            if (self.proc is None or self.proc.poll() is not None or stopping.is_set()
                    or time.monotonic() > deadline):
                return False
        return True

    def restart_if_dead(self) -> None:
        if self.proc is None or self.proc.poll() is None:
            return
        now = time.monotonic()
        if self.restart_at is None:
            code = self.proc.returncode
            log.error("process %d exited (%s); starting it again in %.0f s", self.index,
                      f"signal {-code}" if code < 0 else f"code {code}", self._delay)
            self.restart_at = now + self._delay
            # A process that keeps dying soon after it starts waits longer each time.
            quick = now - self._started_at < 60
            self._delay = min(_RESTART_MAX_S, self._delay * 2) if quick else _RESTART_MIN_S
        elif now >= self.restart_at:
            self.restart_at = None
            self.start()

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        """Its exit code once it has stopped (killed after `timeout`: 1)."""
        if self.proc is None:
            return 0
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.error("process %d did not stop in %.0f s: killed", self.index, timeout)
            self.proc.kill()
            self.proc.wait()
            return 1

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def die_with(supervisor_pid: int) -> None:
    """In a process: be sent SIGTERM when the supervisor dies (even by kill -9), so that
    no orphan keeps serving the port; and stop now if it already has."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor_pid:
        raise SystemExit("wkhost: the supervisor is gone")


def inherited_socket(fd: int) -> socket.socket:
    """The listening socket the supervisor handed over."""
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    return sock


__all__ = ["MAX_PROCESSES", "die_with", "inherited_socket", "supervise"]
