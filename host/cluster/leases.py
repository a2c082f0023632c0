"""This node's shard leases: the lease keeper, one thread that renews them, takes the
shards this node is preferred for and hands over the ones it is not (docs/cluster.md).

- Every round (each --lease-renew seconds): a heartbeat, then one renewal of every held
  shard. A renewed shard is valid here until the time the renewal was *sent* plus
  --lease-deadline, on this node's monotonic clock, whatever PostgreSQL answers and
  however long it took: the lease in PostgreSQL runs --lease-ttl from when PostgreSQL
  renewed it, which is later than the send, so this node stops serving before anyone
  else can take the shard. A shard not renewed is lost at once.
- When PostgreSQL cannot be reached the round fails; held shards stay valid to their
  deadline and are lost then. The keeper goes on trying each round, and logs the first
  failure and the recovery only.
- Taking: an expired shard whose preferred node (placement.preferred, of the nodes that
  heartbeat within the TTL) is this one; or any shard seen expired for longer than two
  TTLs, whoever is preferred (that node is alive but not taking). `on_gained` runs
  before the shard counts as held: the host schedules its alarms there.
- Handing over: a held shard whose preferred node is another live node is let go of
  (`on_lost`, then the lease released so that node takes it at its next round), a few
  shards a round so that a node coming back does not make everything move at once.
- The view of who holds every shard (`lease`, for passing requests to the owner) is
  read at each round, with each lease's expiry: the seconds it had left on
  PostgreSQL's clock, counted from when this node sent the read (so never later than
  the real expiry). A lease past that is no one's in the view, whatever its age: a
  node that paused or died is not named past its lease, even if this node's rounds
  are late.
- `epoch(shard)` and `lease(shard)` are read on every event from other threads: a dict
  lookup and a clock read, no lock. Only the keeper's thread changes the dicts, by
  single assignments.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from .connections import StoreUnavailable
from .lease_terms import LeaseStore, check_times
from .placement import SHARDS, preferred

log = logging.getLogger("wkhost")

# Shards handed over per round: each moved shard is unserved from its release to the
# taker's next round, so a returning node gets its share over several rounds.
HANDOVER_PER_ROUND = 8
# A shard expired this many TTLs is taken by whoever sees it, preferred or not.
FALLBACK_TTLS = 2.0


class LeaseKeeper:
    def __init__(self, store: LeaseStore, node_id: str, address: str,
                 classes: dict[str, str], ttl_s: float, renew_s: float, deadline_s: float,
                 on_gained: Callable[[int, int], object], on_lost: Callable[[int], object],
                 clock: Callable[[], float] = time.monotonic) -> None:
        check_times(ttl_s, renew_s, deadline_s)
        self.node_id, self.address = node_id, address
        self.ttl_s, self.renew_s, self.deadline_s = ttl_s, renew_s, deadline_s
        self._store, self._classes, self._clock = store, classes, clock
        self._on_gained, self._on_lost = on_gained, on_lost
        self._held: dict[int, tuple[int, float]] = {}  # shard -> (epoch, valid until)
        # shard -> (node, epoch, valid until on this node's clock): the leases valid at
        # the last round, with this node's takes and hand-overs since.
        self._owners: dict[int, tuple[str, int, float]] = {}
        self._nodes: dict[str, str] = {node_id: address}  # live node -> address
        self._expired_since: dict[int, float] = {}
        self._fallback_from: dict[int, str] = {}  # shard taken while this node was preferred
        self._failing = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- read by the host, from any thread ----------------------------------------------
    def epoch(self, shard: int) -> int | None:
        """The epoch at which this node holds `shard`, if it does and is within its
        deadline; None otherwise."""
        got = self._held.get(shard)
        if got is None or self._clock() >= got[1]:
            return None
        return got[0]

    def held(self) -> dict[int, int]:
        """Every shard held now, with its epoch."""
        now = self._clock()
        return {s: e for s, (e, until) in list(self._held.items()) if now < until}

    def owners(self) -> dict[int, str]:
        """Who holds each shard, as `lease` says."""
        now = self._clock()
        return {s: o for s, (o, _, until) in self._owners.items() if now < until}

    def lease(self, shard: int) -> tuple[str, int] | None:
        """The node that held `shard` at the last round (this node's takes and
        hand-overs since included), and its epoch; None if nobody did, or if that
        lease has expired since."""
        got = self._owners.get(shard)
        if got is None or self._clock() >= got[2]:
            return None
        return got[0], got[1]

    def address_of(self, node_id: str) -> str | None:
        return self._nodes.get(node_id)

    # -- the thread -------------------------------------------------------------------
    def start(self) -> None:
        """Join the cluster (raises ClusterRefused or StoreUnavailable here), then run
        the rounds on a thread of their own."""
        self.join()
        self._thread = threading.Thread(target=self._run, name="wk-leases", daemon=True)
        self._thread.start()

    def join(self) -> None:
        """This node's row and classes in the store (the first heartbeat)."""
        self._store.join(self.node_id, self.address, self._classes)

    def stop(self, release: bool = True) -> None:
        """End the rounds and let go of every shard (`on_lost` for each). With
        `release`, the leases are released too, so the preferred nodes take them at
        their next round; without, they are left to expire (as if this node died)."""
        self._stop.set()
        if self._thread is not None:
            # A round waiting on a store that does not answer (a hung server) must
            # not hold up the host's shutdown: its shards are let go of without it.
            self._thread.join(self.ttl_s)
            if self._thread.is_alive():
                log.warning("leases: a round is still waiting on the store after %gs; "
                            "stopping without it, the leases left to expire", self.ttl_s)
                release = False
        held = {s: e for s, (e, _) in dict(self._held).items()}
        for shard in held:
            self._let_go(shard)
        if release:
            try:
                self._store.release(self.node_id, held)
                self._store.leave(self.node_id)  # else still preferred for up to a TTL
            except StoreUnavailable as e:
                log.warning("leases: could not release %d shards (%s); they expire "
                            "after the TTL", len(held), e)

    def _run(self) -> None:
        # Nodes started together see each other's heartbeats before any takes shards.
        wait = self.renew_s
        while not self._stop.wait(wait):
            started = self._clock()
            try:
                self.tick()
            except Exception:  # a bug must not end the leases: they would all lapse
                log.exception("leases: a round failed")
            wait = max(0.0, self.renew_s - (self._clock() - started))

    def tick(self) -> None:
        """One round: renew, look at the cluster, take and hand over shards. The
        thread runs one every renew_s; tests call it directly."""
        try:
            self._renew()
            owners, nodes = self._refresh()
            self._take_due(owners, nodes)
            self._hand_over(nodes)
        except StoreUnavailable as e:
            if not self._failing:
                log.warning("leases: the cluster's store cannot be reached (%s); held "
                            "shards are served until their deadline (%gs after the last "
                            "renewal sent)", e, self.deadline_s)
            self._failing = True
        else:
            if self._failing:
                log.info("leases: the cluster's store answers again")
            self._failing = False
        finally:
            self._drop_overdue()

    # -- a round's steps --------------------------------------------------------------
    def _renew(self) -> None:
        held = {s: e for s, (e, _) in self._held.items()}
        sent = self._clock()  # before anything is sent: the deadline counts from here
        # The heartbeat goes first, so a node that dies stops counting as live before
        # its last renewed lease expires: its shards go to the next preferred nodes.
        self._store.heartbeat(self.node_id)
        kept = self._store.renew(self.node_id, held, self.ttl_s) if held else set()
        until = sent + self.deadline_s
        taken = [s for s in held if s not in kept]
        for shard, epoch in held.items():
            if shard in kept:
                self._held[shard] = (epoch, until)
        for shard in taken:
            self._let_go(shard)
        if taken:
            log.warning("leases: %d shards were taken by other nodes: %s", len(taken),
                        ", ".join(map(str, taken)))

    def _refresh(self) -> tuple[Mapping[int, tuple[str | None, int, bool]], dict[str, str]]:
        sent = self._clock()  # each lease's time left counts from here: never too late
        leases = self._store.leases_left()
        nodes = dict(self._store.live_nodes(self.ttl_s))
        nodes[self.node_id] = self.address  # its heartbeat went just now
        now = self._clock()
        valid: dict[int, tuple[str, int, float]] = {}
        owners: dict[int, tuple[str | None, int, bool]] = {}
        for shard in range(SHARDS):
            owner, epoch, left = leases.get(shard, (None, 0, 0.0))
            owners[shard] = (owner, epoch, left > 0)
            if left > 0 and owner is not None:
                valid[shard] = (owner, epoch, sent + left)
                self._expired_since.pop(shard, None)
            else:
                self._expired_since.setdefault(shard, now)
        self._owners, self._nodes = valid, nodes
        return owners, nodes

    def _take_due(self, owners: Mapping[int, tuple[str | None, int, bool]],
                  nodes: dict[str, str]) -> None:
        now = self._clock()
        for shard in range(SHARDS):
            if shard in self._held or self._stop.is_set():
                continue
            owner, epoch, valid = owners.get(shard, (None, 0, False))
            if valid and owner != self.node_id:
                continue
            # Valid and this node's, but not held: it was lost here at its deadline
            # (or in an earlier run). It is taken again at a new epoch, or released.
            want = preferred(shard, nodes)
            since = self._expired_since.get(shard, now)
            if want == self.node_id:
                self._take(shard, None)
            elif not valid and now - since > FALLBACK_TTLS * self.ttl_s:
                self._take(shard, want)
            elif valid:
                self._store.release(self.node_id, {shard: epoch})

    def _take(self, shard: int, fallback_from: str | None) -> None:
        sent = self._clock()
        epoch = self._store.acquire(shard, self.node_id, self.ttl_s)
        if epoch is None:
            return  # another node was quicker
        if not self._call(self._on_gained, shard, epoch):
            self._store.release(self.node_id, {shard: epoch})
            return
        self._held[shard] = (epoch, sent + self.deadline_s)
        self._owners = {**self._owners, shard: (self.node_id, epoch, sent + self.deadline_s)}
        self._expired_since.pop(shard, None)
        if fallback_from is not None:
            log.info("leases: took shard %d, whose preferred node %s does not take it",
                     shard, fallback_from)
            self._fallback_from[shard] = fallback_from

    def _hand_over(self, nodes: dict[str, str]) -> None:
        moved = 0
        for shard in sorted(self._held):
            want = preferred(shard, nodes)
            # A shard taken because its preferred node did not take it is not given
            # back to that node: it would lapse again, over and over.
            if want == self.node_id or self._fallback_from.get(shard) == want:
                continue
            if moved == HANDOVER_PER_ROUND or self._stop.is_set():
                return
            epoch = self._let_go(shard)
            if epoch is not None:
                self._store.release(self.node_id, {shard: epoch})
            moved += 1

    def _drop_overdue(self) -> None:
        now = self._clock()
        overdue = [s for s, (_, until) in self._held.items() if now >= until]
        for shard in overdue:
            self._let_go(shard)
        if overdue:
            log.warning("leases: %d shards passed their deadline unrenewed; not served "
                        "here until taken again", len(overdue))

    def _let_go(self, shard: int) -> int | None:
        """Stop serving `shard` (epoch() is None from here) and tell the host; its
        epoch, or None if it was let go of already (by stop, beside a stuck round)."""
        got = self._held.pop(shard, None)
        if got is None:
            return None
        epoch = got[0]
        self._fallback_from.pop(shard, None)
        mine = self._owners.get(shard)
        if mine is not None and mine[0] == self.node_id:
            self._owners = {s: o for s, o in self._owners.items() if s != shard}
        self._call(self._on_lost, shard)
        return epoch

    def _call(self, callback: Callable[..., object], *args: int) -> bool:
        try:
            callback(*args)
        except Exception:
            log.exception("leases: %s(%s) failed", getattr(callback, "__name__", callback),
                          ", ".join(map(str, args)))
            return False
        return True
