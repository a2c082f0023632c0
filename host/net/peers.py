"""The processes of one host talking to each other, with `wkhost serve --processes N`.

Each process serves HTTP twice: on the shared TCP socket, where clients come, and on its
own Unix socket (`Partition.socket_of`), where the other processes come. The Unix socket
serves the same front door plus the `/_wk/peer/...` routes below, which trust what they
are told (an actor as the sender, the chain of calls). So it lives in a directory of mode
0700, in the data directory (or, if that path is too long for a socket, in one of this
user's under /tmp): only who may read the actors' files may reach it.

- A client's request for an actor of another process is passed on to that process as it
  came (its bearer token too, so the sender stays the same), over the clients of
  net/peer_clients.py, and its answer, held or not, comes back as it is (net/forward.py
  passes it and checks the answer).
- An actor's call to an actor of another process (`Peers.call_process`, for
  net/remote_calls.py) is a blocking POST of
  both records and the chain of calls, from the caller's event thread. A call back into
  an actor of the chain is refused as re-entry, as in one process; a cycle through two
  processes' other threads is not seen, and ends at the events' deadline instead.
- Listing a class's actors asks every process for its share and merges the answers
  (`list_actors`); the test clock moves in every process (`advance_clock`).

The routes that answer these on the other side are net/peer_routes.py.
"""

from __future__ import annotations

import asyncio
import http.client
import select
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import cbor2
from aiohttp import web

from .. import errors, tracing
from ..errors import DeadlineExceeded, PeerUnavailable
from ..interfaces.records import record
from ..partition import Partition
from ..storage.listing import Listed, ListQuery, Page, merged
from ..types import ActorRef, Sender
from .peer_clients import lost, unavailable

if TYPE_CHECKING:
    from ..core.host import Host

CBOR = "application/cbor"
# A kept connection idle longer than this is not used again: the other process closes
# idle ones after its keep-alive timeout (aiohttp's default on the Unix socket, an hour;
# at least this), and a call that finds its connection closed cannot tell that from a
# crash in the middle of the call.
_IDLE_S = 30.0


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path
        self.last_used = time.monotonic()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(str(self._path))
        except BaseException:  # the other process is not there: no socket left open
            sock.close()
            raise
        self.sock = sock


class Peers:
    """The blocking side, for event threads: an actor's call into another process."""

    def __init__(self, data_dir: Path, partition: Partition) -> None:
        self.data_dir = data_dir
        self.partition = partition
        self._local = threading.local()  # {process: _UnixConnection}, one set per thread

    def call_process(self, owner: int, ref: ActorRef, rec: Any, sender: Sender,
                     stack: Iterable[ActorRef], deadline: float) -> Any:
        """`ref`'s answer to the request record `rec`, as a response record, from process
        `owner`. Raises the HostError the other process raised, or PeerUnavailable, or
        DeadlineExceeded."""
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise DeadlineExceeded(f"no time was left to call {ref}")
        return call_answer(self._post(owner, ref, call_body(ref, rec, sender, stack, timeout),
                                      timeout))

    def _post(self, owner: int, ref: ActorRef, body: bytes, timeout: float
              ) -> dict[str, Any]:
        """The other process's answer to the call `body`, decoded."""
        conn = self._connected(owner, ref, timeout)
        try:
            conn.request("POST", "/_wk/peer/call", body, {"content-type": CBOR})
            resp = conn.getresponse()
            data = resp.read()
            out: dict[str, Any] = cbor2.loads(data) if resp.status == 200 else {
                "error": "HostError", "message": f"process {owner} answered {resp.status}: "
                f"{data[:200].decode(errors='replace').strip()}"}
        except TimeoutError:
            self._drop(owner)
            raise DeadlineExceeded(f"{ref} did not answer by the event's deadline") from None
        except (ConnectionResetError, BrokenPipeError) as e:
            self._drop(owner)  # the call was not read: it was gone already
            raise unavailable(owner, str(ref), e) from None
        except (OSError, http.client.HTTPException, cbor2.CBORDecodeError) as e:
            self._drop(owner)
            raise lost(owner, str(ref), e, "call") from None
        conn.last_used = time.monotonic()
        return out

    def _connected(self, owner: int, ref: ActorRef, timeout: float) -> _UnixConnection:
        conn = self._connection(owner, timeout)
        try:
            if conn.sock is None:
                conn.connect()
        except OSError as e:  # nothing was sent: nothing ran
            self._drop(owner)
            raise unavailable(owner, str(ref), e) from None
        return conn

    def _connection(self, process: int, timeout: float) -> _UnixConnection:
        conns: dict[int, _UnixConnection] = self._local.__dict__.setdefault("conns", {})
        conn = conns.get(process)
        if conn is not None and (time.monotonic() - conn.last_used > _IDLE_S
                                 or closed_by_peer(conn.sock)):
            conn.close()  # the other process closed it, or has died since (and restarted)
            conn = None
        if conn is None:
            conn = conns[process] = _UnixConnection(
                self.partition.socket_of(self.data_dir, process), timeout)
        else:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        return conn

    def _drop(self, process: int) -> None:
        conn = self._local.__dict__.get("conns", {}).pop(process, None)
        if conn is not None:
            conn.close()


def call_body(ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
              timeout: float) -> bytes:
    """An actor's call as `/_wk/peer/call` takes it."""
    assert sender.actor is not None
    return cbor2.dumps({
        "cls": ref.cls, "id": ref.id, "method": rec.method, "path": rec.path,
        "query": rec.query, "headers": [list(h) for h in rec.headers],
        "body": rec.body.encode("latin-1"),
        "sender": [sender.actor.cls, sender.actor.id],
        "chain": [[r.cls, r.id] for r in stack],
        "timeout_s": timeout,  # the callee's deadline, from now
        "trace": tracing.carrier(),  # W3C traceparent: the callee's span is a child
    })


def call_answer(out: dict[str, Any]) -> Any:
    """`/_wk/peer/call`'s answer, decoded: a response record, or the HostError raised."""
    if "error" in out:
        raise errors.error_class(str(out["error"]))(str(out["message"]))
    return record(status=out["status"], headers=[tuple(h) for h in out["headers"]],
                  body=bytes(out["body"]).decode("latin-1"))


def closed_by_peer(sock: socket.socket | None) -> bool:
    """Whether a kept connection has been closed from the other end: nothing may be
    read from it between calls, so anything readable is its end (or garbage)."""
    if sock is None:
        return False
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


async def list_actors(app: web.Application, cls: str, after: str, limit: int) -> list[str]:
    """A class's actors after `after`, from every process, in order."""
    host: Host = app["host"]
    partition = host.config.partition
    ids = host.list_actors(cls, after, limit)
    query = urlencode({"after": after, "limit": limit})
    for process in range(partition.count):
        if process == partition.me:
            continue
        status, _, body = await app["peers"].exchange(
            process, "GET", f"/_wk/peer/actors/{quote(cls)}?{query}")
        if status != 200:
            raise PeerUnavailable(f"process {process} could not list {cls!r}")
        ids += cbor2.loads(body)
    return sorted(ids)[:limit]


async def list_page(app: web.Application, q: ListQuery, count: bool) -> Page:
    """One page of `q` over every process's actors, each process asked at once, and the
    count of all that match (`count`)."""
    host: Host = app["host"]
    if host.cluster is not None:  # every node's actors are listed in the store
        return merged(q, [await asyncio.to_thread(host.cluster.list_page, q, count)])
    partition = host.config.partition
    body = cbor2.dumps({"q": asdict(q), "count": count})

    async def ask(process: int) -> tuple[list[Listed], int | None]:
        status, _, out = await app["peers"].exchange(
            process, "POST", "/_wk/peer/list", [("content-type", CBOR)], body)
        if status != 200:
            raise PeerUnavailable(f"process {process} could not list {q.cls!r}")
        doc = cbor2.loads(out)
        return [Listed(**r) for r in doc["rows"]], doc["count"]

    others = [ask(k) for k in range(partition.count) if k != partition.me]
    parts = [host.list_page(q, count), *await asyncio.gather(*others)]
    return merged(q, parts)


async def advance_clock(app: web.Application, now_ms: int, settle_ms: int = 0) -> bool:
    """Bring every other process's test clock to `now_ms`; with `settle_ms`, each waits
    up to that long for its due alarms to be delivered. Whether they all settled."""
    partition = app["host"].config.partition
    others = [app["peers"].exchange(process, "POST",
                                    f"/_wk/peer/clock?at={now_ms}&settle_ms={settle_ms}")
              for process in range(partition.count) if process != partition.me]
    answers = await asyncio.gather(*others)
    return all(cbor2.loads(body).get("settled", True) for _, _, body in answers)


async def catch_up_clock(app: web.Application) -> None:
    """A process started again: bring its test clock to where the others' are (they
    may have moved since the supervisor's start). Those not up yet are skipped."""
    host: Host = app["host"]
    testing, partition = host.testing, host.config.partition
    for process in range(partition.count):
        if process == partition.me:
            continue
        try:
            _, _, body = await app["peers"].exchange(process, "POST", "/_wk/peer/clock?at=0")
            now = int(cbor2.loads(body)["now"])
        except (PeerUnavailable, ValueError, KeyError, cbor2.CBORDecodeError):
            continue
        testing.set_clock(now)
