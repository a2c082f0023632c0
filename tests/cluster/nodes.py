"""Three (or N) real `wkhost serve --cluster` nodes on 127.0.0.1 over one real
PostgreSQL, for the cluster's e2e tests, `make chaos` and `make demo-cluster`.

    cluster = Cluster(tmp_path, pg_url, {"probe": probe_wasm}).start()
    cluster.node(0).actor("probe", "p1", "POST", "/sql", {...})   # any node takes it
    cluster.kill9(1); cluster.pause(2); cluster.resume(2)

Every node runs on the real clock (no --fake-clock: the nodes' clocks must agree), with
lease times of about a second, so that a failover waits seconds. The nodes share one
admin token (written where each looks for it) and one cluster secret.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
from wkhost.partition import shard_of

from tests.e2e.reliability_support import Host
from tests.e2e.server import COMPILED

TTL_S, RENEW_S, DEADLINE_S = 1.5, 0.3, 1.0


class Node(Host):
    """One node: `wkhost serve --cluster URL --node-id NAME`, on the real clock."""

    def __init__(self, name: str, data: Path, actors: dict[str, Path], pg_url: str,
                 secret_file: Path, access: dict[str, str], extra: list[str]) -> None:
        super().__init__(data, actors, extra, access)
        self.name = name
        self.pg_url = pg_url
        self.secret_file = secret_file
        self.paused = False
        self.faulted_at = -float("inf")  # the last kill -9 or pause (monotonic)

    def command(self) -> list[str]:
        cmd = [c for c in super().command() if c != "--fake-clock"]
        return cmd + ["--cluster", self.pg_url, "--node-id", self.name,
                      "--cluster-secret-file", str(self.secret_file),
                      "--lease-ttl", str(TTL_S), "--lease-renew", str(RENEW_S),
                      "--lease-deadline", str(DEADLINE_S)]


class Cluster:
    def __init__(self, base: Path, pg_url: str, actors: dict[str, Path], size: int = 3,
                 access: dict[str, str] | None = None, extra: list[str] | None = None) -> None:
        self.base = base
        self.pg_url = pg_url
        self.secret_file = base / "cluster-secret"
        self.secret_file.write_text(secrets.token_urlsafe(32) + "\n")
        self.token = secrets.token_urlsafe(32)
        self.nodes = [self._node(f"n{i}", actors, access or {}, extra or [])
                      for i in range(size)]

    def _node(self, name: str, actors: dict[str, Path], access: dict[str, str],
              extra: list[str]) -> Node:
        data = self.base / name
        (data / "_host").mkdir(parents=True, exist_ok=True)
        token_file = data / "_host" / "admin-token"
        token_file.write_text(self.token + "\n")
        os.chmod(token_file, 0o600)
        return Node(name, data, actors, self.pg_url, self.secret_file, access, extra)

    # -- the processes --------------------------------------------------------------------
    def start(self, timeout: float = 120) -> Cluster:
        """Start every node at once, so that they join together and the shards spread
        over them, then wait until every shard is held by a node that is up."""
        COMPILED.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            for started in [pool.submit(n.start, timeout) for n in self.nodes]:
                started.result()
        self.wait_held(timeout=30)
        return self

    def node(self, i: int) -> Node:
        return self.nodes[i]

    def up(self) -> list[Node]:
        return [n for n in self.nodes if n.alive and not n.paused]

    def pick_up(self) -> int | None:
        """A node that is up, at random; None if none is."""
        up = [i for i, n in enumerate(self.nodes) if n.alive and not n.paused]
        return random.choice(up) if up else None

    def faulted(self, i: int, since: float) -> bool:
        """Whether node `i` was killed or paused at or after `since` (monotonic)."""
        return self.nodes[i].faulted_at >= since

    def kill9(self, i: int) -> None:
        node = self.nodes[i]
        node.faulted_at = time.monotonic()
        os.kill(node.pid, signal.SIGKILL)
        assert node.proc is not None
        node.proc.wait(10)
        node._close_pipes()

    def pause(self, i: int) -> None:
        self.nodes[i].faulted_at = time.monotonic()
        os.kill(self.nodes[i].pid, signal.SIGSTOP)
        self.nodes[i].paused = True

    def resume(self, i: int) -> None:
        os.kill(self.nodes[i].pid, signal.SIGCONT)
        self.nodes[i].paused = False

    def restart(self, i: int, timeout: float = 120) -> None:
        node = self.nodes[i]
        if node.alive:
            node.stop()
        node.start(timeout)

    def close(self) -> None:
        for node in self.nodes:
            if node.proc is None:
                continue
            if node.paused:
                with contextlib.suppress(ProcessLookupError):
                    self.resume(self.nodes.index(node))
            with contextlib.suppress(Exception):
                if node.alive:
                    node.stop(timeout=20)
            if node.alive:
                os.kill(node.pid, signal.SIGKILL)
                node.proc.wait(10)

    # -- what PostgreSQL says -----------------------------------------------------------
    def leases(self) -> dict[int, tuple[str | None, int, bool]]:
        """shard -> (owner, epoch, still valid), read from the store."""
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            rows = conn.execute("SELECT shard, owner, epoch, expires_at > clock_timestamp() "
                                "FROM leases").fetchall()
        return {int(s): (o, int(e), bool(v)) for s, o, e, v in rows}

    def owner(self, actor_id: str) -> str | None:
        """The node whose process (a member, NODE.K, with --processes) holds the shard."""
        owner, _, valid = self.leases()[shard_of(actor_id)]
        return node_of(owner) if valid and owner else None

    def index_of(self, name: str) -> int:
        return [n.name for n in self.nodes].index(name)

    def wait_held(self, timeout: float = 30, by: set[str] | None = None) -> None:
        """Until every shard is held, validly, by a node in `by` (default: those up)."""
        names = by or {n.name for n in self.up()}
        wait_until(lambda: all(v and node_of(o) in names
                               for o, _, v in self.leases().values()),
                   timeout, f"every shard held by one of {sorted(names)}")

    def any_up(self) -> Node:
        return self.up()[0]


def node_of(member: str | None) -> str | None:
    """The node of a lease's owner: NODE, or NODE.K for a process of --processes N."""
    return None if member is None else member.split(".")[0]


def wait_until(cond: Callable[[], Any], timeout: float, what: str,
               every: float = 0.1) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(every)


Send = Callable[[str], list[threading.Thread]]  # a wave of requests, each on a thread


def across_a_takeover(cluster: Cluster, victim: int, actors: list[str],
                      send: Send) -> tuple[set[str | None], float]:
    """Pause node `victim` past its TTL, calling `send("during")` at once (the other
    nodes' views still name it), then `send("after")` once other nodes hold every one of
    `actors`; wait for every thread sent (each must end within 120 s), then resume the
    node. Answers the owners of `actors` read before the resume, and when it began."""
    name = cluster.node(victim).name
    cluster.pause(victim)
    try:
        threads = send("during")
        wait_until(lambda: all(cluster.owner(a) not in (None, name) for a in actors), 60,
                   "other nodes took the paused node's shards")
        threads += send("after")
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "a request was still waiting"
        owners = {cluster.owner(a) for a in actors}
    finally:
        resumed_at = time.monotonic()
        cluster.resume(victim)
    return owners, resumed_at


@contextlib.contextmanager
def running(cluster: Cluster) -> Iterator[Cluster]:
    try:
        yield cluster.start()
    finally:
        cluster.close()
