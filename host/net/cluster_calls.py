"""An actor's call to an actor that another node of the cluster serves: a blocking POST
of the call to that node's `/_wk/peer/call`, signed (net/cluster_auth.py), from the
caller's event thread, as host/net/peers.py does between the processes of one host.

While nobody holds the callee's shard, or the node asked says it does not serve the
callee (LeaseLost before anything ran, or it cannot be reached), the call asks again,
until the caller's deadline.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterable
from typing import Any

import cbor2

from ..cluster.placement import ClusterPlacement
from ..errors import (
    DeadlineExceeded,
    HostError,
    LeaseLost,
    NotOwnerNow,
    PeerLost,
    PeerUnavailable,
)
from ..types import ActorRef, Sender
from . import cluster_auth
from .peers import CBOR, call_answer, call_body, closed_by_peer

_POLL_S = 0.05
_TARGET = "/_wk/peer/call"


class ClusterCalls:
    def __init__(self, placement: ClusterPlacement, secret: bytes) -> None:
        self._placement = placement
        self._secret = secret
        self._local = threading.local()  # {address: HTTPConnection}, one set per thread

    def call(self, ref: ActorRef, rec: Any, sender: Sender, stack: Iterable[ActorRef],
             deadline: float) -> Any:
        chain = list(stack)
        while True:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise DeadlineExceeded(f"no node answered for {ref} by the event's deadline")
            owner = self._placement.owner(ref.id)
            if owner == self._placement.me:  # came here since the caller asked
                raise LeaseLost(f"{ref} has just come to this node; retry")
            address = None if owner is None else self._placement.address_of(owner)
            if address is not None and owner != self._placement.me:
                try:
                    return call_answer(self._post(address, ref, call_body(
                        ref, rec, sender, chain, timeout), timeout))
                except NotOwnerNow:
                    pass  # refused before it ran: ask again who serves it
                except LeaseLost:
                    raise  # it ran, and its write was refused: not sent again
                except PeerUnavailable:
                    pass  # not reached, or not restored yet: nothing ran
            time.sleep(min(_POLL_S, max(0.0, timeout)))

    def _post(self, address: str, ref: ActorRef, body: bytes, timeout: float
              ) -> dict[str, Any]:
        conn = self._connection(address, timeout)
        headers = {"content-type": CBOR, cluster_auth.HEADER: cluster_auth.sign(
            self._secret, "POST", _TARGET, body)}
        try:
            conn.request("POST", _TARGET, body, headers)
            resp = conn.getresponse()
            data = resp.read()
        except TimeoutError:
            self._drop(address)
            raise DeadlineExceeded(f"{ref} did not answer by the event's deadline") from None
        except ConnectionRefusedError:
            self._drop(address)
            raise PeerUnavailable(f"node {address}, which serves {ref}, is not up") from None
        except (OSError, http.client.HTTPException) as e:
            self._drop(address)
            raise PeerLost(f"node {address}, which serves {ref}, went before it answered "
                           f"({type(e).__name__}): the call may have run") from None
        if resp.status != 200:  # not the peer route's answer: it may have run
            raise HostError(f"node {address} answered {resp.status}: "
                            f"{data[:200].decode(errors='replace').strip()}")
        out: dict[str, Any] = cbor2.loads(data)
        return out

    def _connection(self, address: str, timeout: float) -> http.client.HTTPConnection:
        conns: dict[str, http.client.HTTPConnection] = self._local.__dict__.setdefault(
            "conns", {})
        conn = conns.get(address)
        if conn is not None and closed_by_peer(conn.sock):
            conn.close()  # the other node closed it, or died and restarted
            conn = None
        if conn is None:
            host, _, port = address.rpartition(":")
            conn = conns[address] = http.client.HTTPConnection(host, int(port),
                                                               timeout=timeout)
        else:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        return conn

    def _drop(self, address: str) -> None:
        conn = self._local.__dict__.get("conns", {}).pop(address, None)
        if conn is not None:
            conn.close()
