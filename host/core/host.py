"""The Host: actor classes, actors, their events, and the process-wide machinery.

Events of one actor run one at a time (the actor's lock); different actors run in
parallel on worker threads, since wasmtime releases the GIL while a guest runs. Every
entry point here blocks: call it from a worker thread (`submit`), never the event loop.

The Host is the composition root: it builds the parts and hands each the others it needs.
- events/: one event, from its actor's lock to its end (lifecycle.py), what it is for
  (classes.py, requests.py, alarms.py, holds.py) and what follows it (settle.py);
- runtime/: the machinery that knows no actor (event threads, the run gate, timers,
  bounds, the heap, the janitor);
- links.py: the host as the WIT interfaces see it (interfaces/ports.py).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import tracing
from ..clock import Clock, SystemClock
from ..config import HostConfig
from ..engine.components import EpochTicker, make_engine
from ..engine.pool import pool_memory
from ..engine.spare_instances import SpareInstances
from ..errors import HostError, UnknownClass
from ..events.actor_parts import ActorParts
from ..events.alarms import Alarms
from ..events.call_graph import CallGraph
from ..events.classes import Access, ActorClass, load_class
from ..events.event import Chain
from ..events.eviction import Eviction
from ..events.guest_call import GuestCall
from ..events.holds import Holds
from ..events.instance_source import InstanceSource
from ..events.lifecycle import EventRunner
from ..events.observe import Observer
from ..events.remote import CallsElsewhere
from ..events.requests import Requests
from ..events.settle import Settle
from ..events.slot_table import SlotTable
from ..interfaces.linker import make_linker
from ..placement import Placement
from ..runtime.admission import Admission
from ..runtime.executor import EventExecutor
from ..runtime.janitor import Janitor
from ..runtime.memory import HeapTrim, release_pool_memory, trim_heap
from ..runtime.memory_budget import MemoryBudget, Steps
from ..runtime.pending import PendingEvents
from ..runtime.run_gate import RunGate, statement_loan
from ..runtime.run_places import RunPlaces
from ..runtime.scheduler import Scheduler
from ..storage import images, paths
from ..storage.actordb import StorageError
from ..storage.files import wait_new_files
from ..storage.index import Index
from ..storage.listing import Listed, ListQuery
from ..testing import Switches
from ..types import ActorRef, Request, Response, Sender
from .links import InterfaceHost
from .process_setup import prepare_process, start_tracing

if TYPE_CHECKING:
    from .cluster_node import ClusterNode

__all__ = ["Host"]

log = logging.getLogger("wkhost")
T = TypeVar("T")


class Host:
    def __init__(self, config: HostConfig, clock: Clock | None = None,
                 remote: CallsElsewhere | None = None, cluster: ClusterNode | None = None,
                 observer: Observer | None = None) -> None:
        """`remote`: how an actor calls one served elsewhere, by another process or node
        (host/net/remote_calls.py); none for one process and no cluster. `cluster`: this
        node's part in a cluster, if any. `observer`: told of each guest call, host
        function and event (a bench's probe: events/observe.py)."""
        self.config = config
        self.observer = observer
        self.cluster = cluster
        self.clock = clock or SystemClock()
        self.testing = Switches(self.clock, config.always_fresh_instance)
        self.engine = make_engine(config.pool())
        self.pool_memory = pool_memory(self.engine)
        self.classes: dict[str, ActorClass] = {}
        self.graph = CallGraph()
        self.gate = RunGate(config.run_slots())
        self.spares = SpareInstances(config.spare_instances)
        self.holds = Holds()
        self.remote = remote
        # Who serves an actor (host/placement.py): asked once per request or call.
        self.placement: Placement = config.partition if cluster is None else cluster.placement
        prepare_process(config)
        start_tracing(config)
        self.index = Index(config.partition.host_dir(config.data_dir))
        # Each of `serve --processes N` keeps its share of the bound on actors.
        self.admission = Admission(config.data_dir,
                                   -(-config.max_actors // config.partition.count),
                                   config.min_free_disk_bytes)
        self._ticker = EpochTicker(self.engine)
        # The run slots plus one: the next event opens its database beside the running one.
        self.executor = EventExecutor(min(config.workers, config.run_slots() + 1),
                                      config.workers)
        self._pending = PendingEvents(self.executor, config)
        self._build_parts()
        self._started = False
        self._stopping = threading.Event()

    def _build_parts(self) -> None:
        """The parts that run events, each handed what it uses: Alarms and Requests the
        runner's `run` and the guest call themselves (events/seams.py)."""
        config = self.config
        self.scheduler = Scheduler(self.clock, self._dispatch_alarm,
                                   max_inflight=max(2, config.workers))
        guest_call = GuestCall(config, self.observer)
        self.alarms = Alarms(config, self.clock, self.scheduler, self.index, guest_call)
        self._table = SlotTable(config)
        self.eviction = Eviction(config, self._table, self.classes, self.spares,
                                 self.admission, self.alarms, self.index, self.testing)
        self.memory = self._memory_budget()
        instances = InstanceSource(self.engine, config, self.classes, self._table,
                                   self.spares, self.eviction, self.memory)
        replication = None if self.cluster is None else self.cluster.replication
        parts = ActorParts(self.classes, self._table, self.graph, instances, guest_call,
                           self.alarms, self.holds, self.index, self.eviction, replication)
        places = RunPlaces(self.gate, self.long_wait, self.admission,
                           functools.partial(statement_loan, self.gate, self.executor))
        self._runner = EventRunner(config, parts, places, Settle(
            config, self._table, self.alarms, self.eviction, self.index, self.testing),
            self.testing, self.observer)
        self.alarms.runs_with(self._runner.run)
        self._requests = Requests(
            config=config, classes=self.classes, holds=self.holds, remote=self.remote,
            run_event=self._runner.run, call_export=guest_call, long_wait=self.long_wait,
            testing=self.testing, placement=self.placement)

    def _memory_budget(self) -> MemoryBudget | None:
        """What keeps the RSS under --memory-budget: the steps it lets go by, cheapest
        first (runtime/memory_budget.py); none without a budget."""
        if not self.config.memory_budget():
            return None
        spares, pool = self.spares, self.pool_memory
        return MemoryBudget(self.config.memory_budget(), Steps(
            cheap=(functools.partial(spares.drop_idle, 0),
                   functools.partial(release_pool_memory, pool), trim_heap),
            evict=self.eviction.evict_for_memory))

    # -- set-up and shutdown ------------------------------------------------------------
    def add_class(self, name: str, wasm: Path, access: Access = "public",
                  reuse_instances: bool = False) -> ActorClass:
        cls = load_class(self.engine, name, wasm, self.config.compile_cache(),
                         lambda: make_linker(self.engine, self._interface_host(),
                                             self.observer),
                         access, reuse_instances)
        self.classes[name] = cls
        return cls

    def _interface_host(self) -> InterfaceHost:
        # An actor's call goes straight to the Requests: the Host has no method for it.
        return InterfaceHost(self.config, self.clock, self.actor_ref,
                             self._requests.call_from_actor, self._requests.call_beside,
                             self.long_wait)

    def start(self) -> None:
        if self.index.was_unclean:
            log.warning("the last stop was not clean: rebuilding the alarm index")
        if self.index.was_unclean or self.index.is_new:
            # A stop that was not clean is what leaves a schema image's work files.
            images.remove_leftovers(self.config.data_dir, self.config.partition.owns_shard)
            try:
                self.index.rebuild(self.config.data_dir, self.config.partition.owns_shard)
            except StorageError as e:  # without it, no alarm would ever fire: do not serve
                raise HostError(f"the index in {self.index.dir} cannot be rebuilt ({e}); "
                                "free some room and start again") from None
        self.alarms.load()
        self.admission.actors = self.index.count_actors()
        self._ticker.start()
        self.scheduler.start()
        Janitor(self._stopping, self._tidy).start()
        self._started = True

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop handing out alarms, let running events finish (bounded), close every db."""
        self._stopping.set()
        self.holds.close()
        self.scheduler.stop()
        deadline = time.monotonic() + timeout_s
        self.executor.shutdown(cancel_futures=True)
        self._pending.wait_empty(deadline)
        for slot in self._table.all():
            if slot.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                self.eviction.close_slot(slot)  # an actor that keeps nothing leaves no file
                slot.lock.release()
        self.spares.drop_idle(0)
        release_pool_memory(self.pool_memory)
        self._ticker.stop()
        wait_new_files()
        self.index.close()
        if self.config.otlp_endpoint:
            tracing.shutdown()  # what is batched goes out

    # -- entry points -------------------------------------------------------------------
    def actor_ref(self, cls: str, actor_id: str) -> ActorRef:
        if cls not in self.classes:
            raise UnknownClass(f"no actor class named {cls!r}")
        return ActorRef(cls, paths.check_id(actor_id))

    @property
    def pending_events(self) -> int:
        """Events waiting for an event thread, or running on one (backpressure's count)."""
        return self._pending.count

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run `fn` on a worker, or refuse at once when too much is queued host-wide."""
        return self._pending.submit(fn, *args)

    def request(self, ref: ActorRef, req: Request, sender: Sender, *,
                may_hold: bool = False, again: bool = False) -> Response:
        """A request from outside (the public or an operator) to `ref`'s handle, run
        here: the caller asks `placement` first who serves `ref` (the front door and the
        peer routes do), and passes on one served elsewhere.

        The `wk-hold-*` headers of the answer are the host's (events/holds.py): they never
        reach the caller. With `may_hold`, an answer that asks to be held comes back with
        `hold` set, for the caller to wait on and then deliver the request `again`."""
        return self._requests.request(ref, req, sender, may_hold, again)

    def call_here(self, ref: ActorRef, record: Any, sender: Sender, chain: Chain,
                  deadline: float) -> Any:
        """An actor's call to an actor of this process: from an actor's call here
        (events/requests.py), or from another process or node (host/net/peer_routes.py),
        with the chain of calls it came through. Run here: the caller asks `placement`
        first who serves `ref`, as those two do."""
        return self._requests.call_here(ref, record, sender, chain, deadline)

    @contextlib.contextmanager
    def long_wait(self) -> Iterator[None]:
        """A wait of an event that may be long (the network, another process, another
        actor's event): its run slot, and its thread's place among the working ones
        (runtime/executor.py), serve other events meanwhile."""
        with self.gate.waiting(), self.executor.blocking():
            yield

    def list_actors(self, cls: str, after: str = "", limit: int = 1000) -> list[str]:
        if cls not in self.classes:
            raise UnknownClass(f"no actor class named {cls!r}")
        return self.index.actors(cls, after, limit)

    def list_page(self, q: ListQuery, count: bool = False
                  ) -> tuple[list[Listed], int | None]:
        """One page of this process's actors of `q.cls`, filtered and ordered by what they
        published (storage/listing.py), and how many match; no actor's event runs."""
        if q.cls not in self.classes:
            raise UnknownClass(f"no actor class named {q.cls!r}")
        return self.index.list_page(q, count)

    def evict_idle(self, keep: int | None = None) -> int:
        """Drop idle actors' instances and databases: those idle past idle_instance_s (or
        followed_s, for a sleepy one), then the least recently used beyond `keep` (default
        max_live_instances). Returns how many were dropped."""
        return self.eviction.evict_idle(keep)

    def _dispatch_alarm(self, ref: ActorRef) -> None:
        self.executor.submit(self.alarms.fire, ref)

    def _tidy(self, trim: HeapTrim) -> None:
        """The janitor's round (runtime/janitor.py): what the host lets go of when idle."""
        self.index.flush()
        try:
            trim.count(self.evict_idle())
        except Exception:
            log.exception("evicting idle actors failed")
        trim.count(self.spares.drop_idle(self.config.spare_idle_s))
        release_pool_memory(self.pool_memory, self.config.pool_release_idle_s)
        if self.memory is not None:
            self.memory.check()
