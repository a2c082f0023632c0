"""Load on a cluster for its e2e tests and `make chaos`: exec-durable writes whose
acknowledgements are kept, and orders (the shop's workflow) driven through the app.

A write is acknowledged when a node answered 200 with no error: from then on it must be
in the actor's table, whatever node serves it next. Writes that got any other answer
are retried, on the same actor with a new value, as a client would; they may or may not
have been kept (like a timeout), and nothing is asserted about them except that none is
there twice (the table's key).

How long a client waited: from a write's first attempt to its acknowledgement, retries
included (`Waits`). An attempt whose entry node was itself killed or paused while it
asked does not count (that is the client's own connection waiting, not the actor).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .nodes import Cluster

CREATE = "CREATE TABLE IF NOT EXISTS w(v TEXT PRIMARY KEY)"
INSERT = "INSERT INTO w VALUES (?)"
ORDER = {"item": "book", "qty": 1, "amount": 1200, "cool_off_ms": 200,
         "approve_within_ms": 600_000}


def call(url: str, method: str, path: str, payload: Any = None, token: str | None = None,
         timeout: float = 30) -> tuple[int, Any]:
    """One request: (status, decoded JSON or text); (0, why) if no answer came."""
    body = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url + path, data=body, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, data = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, data = e.code, e.read()
    except (OSError, urllib.error.URLError) as e:
        return 0, f"{type(e).__name__}: {e}"
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode(errors="replace")


def sql(cluster: Cluster, actor: str, statement: str, params: list[Any] | None = None,
        durable: bool = True, node: int | None = None, timeout: float = 30
        ) -> tuple[int, Any]:
    nodes = cluster.up() if node is None else [cluster.node(node)]
    if not nodes:
        return 0, "no node is up"
    target = random.choice(nodes)
    return call(target.url, "POST", f"/probe/{quote(actor, safe='')}/sql",
                {"sql": statement, "params": params or [], "durable": durable},
                cluster.token, timeout)


def ok(answer: tuple[int, Any]) -> bool:
    status, doc = answer
    return status == 200 and isinstance(doc, dict) and "error" not in doc


def values(cluster: Cluster, actor: str, timeout: float = 60) -> list[str]:
    """The actor's rows, read through any node, retried until one answers."""
    end = time.monotonic() + timeout
    while True:
        answer = sql(cluster, actor, "SELECT v FROM w ORDER BY v", durable=False)
        if ok(answer):
            return [row[0] for row in answer[1]["rows"]]
        if time.monotonic() > end:
            raise AssertionError(f"{actor} was not served within {timeout} s: {answer}")
        time.sleep(0.1)


def ensure_table(cluster: Cluster, actor: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not ok(answer := sql(cluster, actor, CREATE)):
        if time.monotonic() > end:
            raise AssertionError(f"{actor}: no table within {timeout} s: {answer}")
        time.sleep(0.1)


@dataclass(frozen=True)
class Wait:
    """A client's wait for one acknowledged write: from its first attempt (`since`) to
    its acknowledgement (`until`), on the test's monotonic clock."""

    actor: str
    since: float
    until: float
    failures: tuple[str, ...] = ()  # the answers of the attempts before, in short

    @property
    def seconds(self) -> float:
        return self.until - self.since


WAIT_KEPT_S = 0.1  # shorter waits are not kept (the longest is, whatever it is)


@dataclass
class Writers:
    """Threads that write unique values to `actors` until stopped, keeping what was
    acknowledged. Bounded: each stops after `limit` writes."""

    cluster: Cluster
    actors: list[str]
    threads: int = 4
    limit: int = 10_000
    acked: dict[str, list[str]] = field(default_factory=dict)
    failed: int = 0
    longest_gap_s: float = 0.0
    waits: list[Wait] = field(default_factory=list)  # those over WAIT_KEPT_S
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seq: Any = field(default_factory=itertools.count)
    _running: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Writers:
        for actor in self.actors:
            ensure_table(self.cluster, actor)
            self.acked.setdefault(actor, [])
        for i in range(self.threads):
            t = threading.Thread(target=self._write, args=(i,), daemon=True)
            t.start()
            self._running.append(t)
        return self

    def _write(self, i: int) -> None:
        actor, since, failures = random.choice(self.actors), None, []
        for _ in range(self.limit):
            if self._stop.is_set():
                return
            value = f"w{i}-{next(self._seq)}"
            entry = self.cluster.pick_up()
            if entry is None:
                time.sleep(0.05)
                continue
            start = time.monotonic()
            since = start if since is None else since
            answer = sql(self.cluster, actor, INSERT, [value], node=entry, timeout=15)
            now = time.monotonic()
            if self.cluster.faulted(entry, start):
                since, failures = now, []  # the client's own connection waited, not the actor
            if ok(answer):
                with self._lock:
                    self.acked[actor].append(value)
                    if now - since > WAIT_KEPT_S:
                        self.waits.append(Wait(actor, since, now, tuple(failures)))
                    self.longest_gap_s = max(self.longest_gap_s, now - since)
                actor, since, failures = random.choice(self.actors), None, []
            else:
                failures.append(f"{now - start:.2f} s at {self.cluster.node(entry).name}: "
                                f"{answer[0]} {str(answer[1])[:100]}")
                with self._lock:
                    self.failed += 1
                time.sleep(0.05)

    def count(self) -> int:
        with self._lock:
            return sum(map(len, self.acked.values()))

    def stop(self) -> None:
        self._stop.set()
        for t in self._running:
            t.join(60)

    def lost(self) -> dict[str, list[str]]:
        """Acknowledged values missing from the actors' tables now."""
        missing = {}
        for actor, acked in self.acked.items():
            present = values(self.cluster, actor)
            assert len(present) == len(set(present)), f"{actor} holds a value twice"
            gone = sorted(set(acked) - set(present))
            if gone:
                missing[actor] = gone
        return missing


def start_orders(cluster: Cluster, ids: list[str], timeout: float = 60) -> None:
    """Start each order through the app (any node), and send its approval at once (a
    workflow keeps an event that comes before it waits for it)."""
    for oid in ids:
        _until_ok(lambda oid=oid: call(random.choice(cluster.up()).url, "POST",
                                       f"/app/web/orders/{oid}", ORDER), timeout)
        _until_ok(lambda oid=oid: call(random.choice(cluster.up()).url, "POST",
                                       f"/app/web/orders/{oid}/approve", {"by": "ann"}),
                  timeout)


def order_state(cluster: Cluster, oid: str) -> str | None:
    status, doc = call(random.choice(cluster.up()).url, "GET", f"/app/web/orders/{oid}")
    return doc.get("state") if status == 200 and isinstance(doc, dict) else None


def _until_ok(send: Any, timeout: float) -> Any:
    end = time.monotonic() + timeout
    while True:
        status, doc = send()
        if 200 <= status < 300:
            return doc
        if time.monotonic() > end:
            raise AssertionError(f"not answered within {timeout} s: {status} {doc}")
        time.sleep(0.1)
