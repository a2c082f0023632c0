"""The Host: actor classes, actors, their events, and the process-wide machinery.

Events of one actor run one at a time (the actor's lock); different actors run in
parallel on worker threads, since wasmtime releases the GIL while a guest runs. Every
entry point here blocks: call it from a worker thread (`submit`), never the event loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal, TypeVar

import apsw
from wasmtime import WasmtimeError
from wasmtime.component import Linker

from ..engine.components import (
    EpochTicker,
    component_protocols,
    load_served_component,
    make_engine,
)
from ..engine.pool import pool_exhausted, pool_memory
from ..errors import (
    Forbidden,
    GuestFailed,
    HostError,
    NotServedHere,
    NotThatProtocol,
    Overloaded,
    StorageFailed,
    TooLarge,
    UnknownClass,
)
from ..interfaces.linker import make_linker
from ..net import hold
from ..net.peers import Peers
from ..storage import alarm_store as alarms
from ..storage import paths
from ..storage.actordb import ActorDb
from ..storage.files import delete_db_files, wait_new_files
from ..storage.images import SchemaImage, build_schema_image
from ..storage.index import Index, prepare_layout
from ..storage.policy import set_heap_limit
from ..storage.watch import Loan
from ..testing import crashpoints
from ..types import ActorRef, Request, Response, Sender
from ..wire import request_record, response_from_record, sender_variant
from . import event
from .admission import Admission
from .clock import Clock, SystemClock
from .config import HostConfig
from .event import CallGraph, Chain, Event, RunGate
from .executor import EventExecutor
from .instance import ComponentExports, Instance, Output
from .scheduler import Scheduler
from .slot import ActorSlot
from .spares import SpareInstances

log = logging.getLogger("wkhost")
T = TypeVar("T")
Access = Literal["public", "internal"]

# Each nested actor call costs about a dozen Python frames inside ctypes callbacks.
_RECURSION_LIMIT = 20_000
_THREAD_STACK_BYTES = 64 << 20


class _Gone(HostError):
    """An event that must not create its actor found none."""


# glibc's malloc_trim gives freed C heap back to the system, and mallopt tunes when it
# does so by itself; None elsewhere (musl, macOS).
try:
    _libc = ctypes.CDLL("libc.so.6")
    _malloc_trim: Callable[[int], int] | None = _libc.malloc_trim
    _mallopt: Callable[[int, int], int] | None = _libc.mallopt
except (OSError, AttributeError):
    _malloc_trim = _mallopt = None
_TRIM_AFTER_DROPS = 32
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# A big value (a journal of thousands of positions, a 1 MiB result) passes through
# buffers of a few MiB: SQLite's group_concat, the Python str, the copy lowered into the
# guest. glibc's defaults serve each from a fresh mmap, or trim the heap under it as soon
# as it is freed, so every event paid page faults on all of it again: loading a
# 5,000-position journal took 1.4 ms instead of 0.8. Buffers up to 4 MiB now come from the
# heap, and up to 8 MiB of free heap top is kept for the next event; the janitor's
# malloc_trim still gives the rest back.
_MMAP_THRESHOLD_BYTES = 4 << 20
_TRIM_THRESHOLD_BYTES = 8 << 20


@dataclass
class ActorClass:
    name: str
    wasm: Path
    exports: ComponentExports
    linker: Linker  # this class's own: see make_linker
    access: Access = "public"
    reuse_instances: bool = False  # see host/spares.py
    # What the class's new actors' databases start as, once learnt (host/sqlite.py,
    # schema images); learning stops for good once an on-init did not match its image.
    schema_image: SchemaImage | None = None
    schema_learning: bool = True
    # What the component declares it answers (its `wk-protocols` section, host/engine.py):
    # a request that names another protocol in its `wk-protocol` header reaches no guest.
    protocols: frozenset[str] = frozenset()


class Host:
    def __init__(self, config: HostConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.engine = make_engine(config.pool())
        self.pool_memory = pool_memory(self.engine)
        self.classes: dict[str, ActorClass] = {}
        self.graph = CallGraph()
        self.gate = RunGate(config.run_slots())
        self._slots: dict[ActorRef, ActorSlot] = {}
        self._slots_lock = threading.Lock()
        self.spares = SpareInstances(config.spare_instances)
        self.holds = hold.Holds()
        self._pending = 0
        self._pending_lock = threading.Lock()
        config.data_dir.mkdir(parents=True, exist_ok=True)
        set_heap_limit(config.sql_memory_bytes)
        if _mallopt is not None:
            _mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
            _mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES)
        if config.partition.count == 1:  # else the processes' supervisor has done it
            prepare_layout(config.data_dir, 1)
        self.index = Index(config.partition.host_dir(config.data_dir))
        # Each of `serve --processes N` keeps its share of the bound on actors.
        self.admission = Admission(config.data_dir,
                                   -(-config.max_actors // config.partition.count),
                                   config.min_free_disk_bytes)
        self.peers = Peers(config.data_dir, config.partition)
        self.scheduler = Scheduler(self.clock, self._dispatch_alarm,
                                   max_inflight=max(2, config.workers))
        self._ticker = EpochTicker(self.engine)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), _RECURSION_LIMIT))
        threading.stack_size(_THREAD_STACK_BYTES)
        # The run slots plus one: the next event opens its database beside the running one.
        self.executor = EventExecutor(min(config.workers, config.run_slots() + 1),
                                      config.workers)
        self._started = False
        self._stopping = threading.Event()

    # -- set-up and shutdown ------------------------------------------------------------
    def add_class(self, name: str, wasm: Path, access: Access = "public",
                  reuse_instances: bool = False) -> ActorClass:
        paths.check_class(name)
        component = load_served_component(self.engine, wasm, self.config.compile_cache())
        cls = ActorClass(name, wasm, ComponentExports(component),
                         make_linker(self.engine, self), access, reuse_instances,
                         protocols=component_protocols(wasm))
        self.classes[name] = cls
        return cls

    def start(self) -> None:
        if self.index.was_unclean:
            log.warning("the last stop was not clean: rebuilding the alarm index")
        if self.index.was_unclean or self.index.is_new:
            try:
                self.index.rebuild(self.config.data_dir, self.config.partition.owns_shard)
            except apsw.Error as e:  # without it, no alarm would ever fire: do not serve
                raise HostError(f"the index in {self.index.dir} cannot be rebuilt ({e}); "
                                "free some room and start again") from None
        for ref, at_ms in self.index.alarms():
            self.scheduler.set(ref, at_ms)
        self.admission.actors = self.index.count_actors()
        self._ticker.start()
        self.scheduler.start()
        threading.Thread(target=self._janitor, name="wk-janitor", daemon=True).start()
        self._started = True

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop handing out alarms, let running events finish (bounded), close every db."""
        self._stopping.set()
        self.holds.close()
        self.scheduler.stop()
        deadline = time.monotonic() + timeout_s
        self.executor.shutdown(cancel_futures=True)
        while self._pending > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._slots_lock:
            slots = list(self._slots.values())
        for slot in slots:
            if slot.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                self._close_slot(slot)  # an actor that keeps nothing leaves no file
                slot.lock.release()
        self.spares.drop_idle(0)
        self._release_pool_memory()
        self._ticker.stop()
        wait_new_files()
        self.index.close()

    # -- entry points -------------------------------------------------------------------
    def actor_ref(self, cls: str, actor_id: str) -> ActorRef:
        if cls not in self.classes:
            raise UnknownClass(f"no actor class named {cls!r}")
        return ActorRef(cls, paths.check_id(actor_id))

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run `fn` on a worker, or refuse at once when too much is queued host-wide."""
        with self._pending_lock:
            if self._pending >= self.config.max_pending_events:
                raise Overloaded("the host is at its limit of waiting events; retry shortly")
            self._pending += 1
        try:
            fut = self.executor.submit(self._counted, fn, *args)
        except RuntimeError:
            self._finish_pending()
            raise Overloaded("the host is shutting down") from None
        # One cancelled at shutdown never runs: count it down here instead.
        fut.add_done_callback(self._count_cancelled)
        return fut

    def _count_cancelled(self, fut: Future[Any]) -> None:
        if fut.cancelled():
            self._finish_pending()

    def _counted(self, fn: Callable[..., T], *args: Any) -> T:
        # Counted down on the worker, before the result is handed over, so whoever waits
        # on the result sees the slot free again.
        try:
            return fn(*args)
        finally:
            self._finish_pending()

    def _finish_pending(self) -> None:
        with self._pending_lock:
            self._pending -= 1

    def request(self, ref: ActorRef, req: Request, sender: Sender, *,
                may_hold: bool = False, again: bool = False) -> Response:
        """A request from outside (the public or an operator) to `ref`'s handle.

        The `wk-hold-*` headers of the answer are the host's (host/hold.py): they never
        reach the caller. With `may_hold`, an answer that asks to be held comes back with
        `hold` set, for the caller to wait on and then deliver the request `again`."""
        if sender.kind == "public" and self.classes[ref.cls].access == "internal":
            raise Forbidden(f"class {ref.cls!r} is internal: only actors and operators call it")
        self._check_protocol(ref.cls, req.headers)
        if len(req.body) > self.config.max_body_bytes:
            raise TooLarge(f"the body is over the {self.config.max_body_bytes}-byte cap")
        record = request_record(req)
        deadline = time.monotonic() + self.config.wall_budget_ms / 1000
        ran: Event | None = None
        asked: tuple[int, str | None] = (0, None)  # the answer's hold: ms, state

        def body(slot: ActorSlot, ev: Event) -> Any:
            nonlocal ran, asked
            ran = ev
            out = self._handle(slot, ev, record, sender)
            if may_hold:
                asked = hold.parse_hold(out.headers)
                ev.hold_ms = asked[0]
            return out

        try:
            out = self._run_event(ref, "request", Chain(), deadline, body,
                                  wakes_holds=not again)
            resp = response_from_record(out, self.config.max_body_bytes)
        except BaseException:
            if ran is not None and ran.hold is not None:  # nobody will wait on it
                self.holds.discard(ref, ran.hold)
            raise
        if ran is not None and ran.hold is not None:
            resp.hold, (resp.hold_ms, resp.hold_state) = ran.hold, asked
        if any(hold.is_hold_header(k) for k, _ in resp.headers):
            resp.headers = [(k, v) for k, v in resp.headers if not hold.is_hold_header(k)]
        return resp

    def call_from_actor(self, ref: ActorRef, record: Any, sender: Sender, caller: Event) -> Any:
        """`actors.call`: the request and response records pass through unconverted. An
        actor of another process (host/partition.py) is called through it, while this
        event's run slot serves others."""
        if crashpoints.ARMED:
            crashpoints.hit(f"call:{ref.cls}")
        cap = self.config.max_body_bytes
        if len(record.body) > cap:  # Latin-1 on the wire: one character per byte
            raise TooLarge(f"the request body is over the {cap}-byte cap")
        deadline = min(caller.deadline, time.monotonic() + self.config.wall_budget_ms / 1000)
        if not self.config.partition.owns(ref.id):
            with self.long_wait():
                return self.peers.call(ref, record, sender, caller.chain.stack, deadline)
        return self.call_here(ref, record, sender, caller.chain, deadline)

    def _statement_loan(self) -> Loan | None:
        """On a guest statement's thread: what it lends should it run long (its run slot,
        its place among the working event threads), as `sql_watch.Loan`."""
        slot, place = self.gate.held_here(), self.executor.counted_here()
        if not (slot or place):
            return None

        def lend() -> Callable[[], None]:
            if place:
                self.executor.lend_place()
            if slot:
                self.gate.lend()
            return lambda: self._take_back(slot, place)

        return lend

    def _take_back(self, slot: bool, place: bool) -> None:
        if place:
            self.executor.reclaim_place()
        if slot:
            self.gate.reclaim()

    @contextlib.contextmanager
    def long_wait(self) -> Iterator[None]:
        """A wait of an event that may be long (the network, another process, another
        actor's event): its run slot, and its thread's place among the working ones
        (host/executor.py), serve other events meanwhile."""
        with self.gate.waiting(), self.executor.blocking():
            yield

    def call_here(self, ref: ActorRef, record: Any, sender: Sender, chain: Chain,
                  deadline: float) -> Any:
        """An actor's call to an actor of this process: from `call_from_actor`, or from
        another process (host/peers.py), with the chain of calls it came through."""
        self._check_protocol(ref.cls, record.headers)
        cap = self.config.max_body_bytes
        out = self._run_event(ref, "request", chain, deadline,
                              lambda slot, ev: self._handle(slot, ev, record, sender))
        if len(out.body) > cap:
            raise TooLarge(f"{ref}'s response body ({len(out.body)} bytes) is over the "
                           f"{cap}-byte cap")
        return out

    def _check_protocol(self, cls: str, headers: list[tuple[str, str]]) -> None:
        """A request that names its protocol (`wk-protocol: NAME`, lower-case headers)
        reaches only a class whose component declares NAME. The host knows nothing of
        what a protocol means: this only keeps a client of one (say, `wkhost workflow`)
        from running another class's code with its request."""
        for k, v in headers:
            if k.lower() == "wk-protocol":
                declared = self.classes[cls].protocols
                if v.strip() not in declared:
                    raise NotThatProtocol(
                        f"class {cls!r} does not declare the protocol {v.strip()!r} "
                        f"(it declares {', '.join(sorted(declared)) or 'none'}); "
                        "nothing was run")
                return

    def list_actors(self, cls: str, after: str = "", limit: int = 1000) -> list[str]:
        if cls not in self.classes:
            raise UnknownClass(f"no actor class named {cls!r}")
        return self.index.actors(cls, after, limit)

    # -- events -------------------------------------------------------------------------
    def _enqueue(self, ref: ActorRef) -> ActorSlot:
        """Find or make the actor's slot and count this event as waiting on it, atomically,
        so the janitor never drops a slot that an event is about to lock."""
        if not self.config.partition.owns(ref.id):  # the front door passes these on
            raise NotServedHere(f"{ref} is served by process "
                                f"{self.config.partition.owner(ref.id)}, not this one")
        with self._slots_lock:
            slot = self._slots.get(ref)
            if slot is None:
                slot = self._slots[ref] = ActorSlot(ref, paths.db_path(
                    self.config.data_dir, ref.cls, ref.id))
            if slot.waiting >= self.config.max_queue_per_actor:
                raise Overloaded(f"{ref} has {slot.waiting} events waiting; retry shortly")
            slot.waiting += 1
            return slot

    def _run_event(self, ref: ActorRef, kind: str, chain: Chain, deadline: float,
                   body: Callable[[ActorSlot, Event], T], create: bool = True,
                   wakes_holds: bool = True) -> T:
        slot = self._enqueue(ref)
        try:
            self.graph.acquire(chain, slot, deadline - time.monotonic(), self.long_wait)
        finally:
            with self._slots_lock:
                slot.waiting -= 1
        ev = Event(slot, kind, deadline, chain, self.gate, self.long_wait, self._statement_loan)
        stack = event.stack()
        # Opening the database before the run slot, and closing it with the instance
        # after, keeps that work (about 0.8 ms of a cold wake's 5.5) off the one core
        # that runs events: SQLite and munmap run beside the next event instead.
        sleeps = False
        try:
            exists = self._open_storage(slot, create)
            with self.gate.running():
                stack.append(ev)
                try:
                    if not exists or not self._ready(slot, ev, create):
                        raise _Gone(f"{ref} does not exist")
                    return body(slot, ev)
                finally:
                    stack.pop()
                    sleeps = self._after_event(slot, ev)
        finally:
            if sleeps:
                self._close_slot(slot)  # the instance and the db connection: nothing warm
            # Before the lock goes: see host/hold.py for why no wake-up is lost.
            if wakes_holds:
                self.holds.wake(ref)
            if ev.hold_ms:
                ev.hold = self.holds.add(ref)
            self.graph.release(chain, slot)

    def _open_storage(self, slot: ActorSlot, create: bool) -> bool:
        """Open the actor's db, unless it is open. False: the actor does not exist."""
        if slot.db is None:
            if not slot.path.exists():
                if not create:
                    return False
                self.admission.admit()
            db = self._open_db(slot)
            if db.created:
                self.admission.added()
            try:
                # A database just made holds the template's alarm row: nothing to read.
                slot.alarm_seen = alarms.NONE if db.created else alarms.read(db)
            except apsw.Error as e:
                db.close()
                raise StorageFailed(f"{slot.ref}'s database cannot be read: {e}") from None
            slot.db = db
        return True

    def _ready(self, slot: ActorSlot, ev: Event, create: bool) -> bool:
        """An instance for the open db; create the actor (on-init) if it is new."""
        assert slot.db is not None
        if slot.initialized is None:
            # A database just made has no meta yet: nothing to read.
            meta = {} if slot.db.created else dict(
                slot.db.host_exec("SELECT k, v FROM main._wk_host_meta"))
            slot.initialized = meta.get("initialized") == 1
            trap = meta.get("trap")
            slot.last_trap = None if trap is None else str(trap)
            if not slot.initialized and (meta or not slot.db.created):
                # An earlier on-init never finished (the host died in it), or the host
                # died before it began, in a database made from a schema image that the
                # on-init had yet to take up: start clean.
                slot.close()
                delete_db_files(slot.path)
                self.admission.removed()
                self._open_storage(slot, create=True)
                slot.initialized = False
        if slot.instance is None:
            slot.instance = self._instance_for(slot, creating=create and not slot.initialized)
        if not slot.initialized:
            if not create:
                return False
            self._create(slot, ev)
        return True

    def _open_db(self, slot: ActorSlot) -> ActorDb:
        cls = self.classes.get(slot.ref.cls)
        image = cls.schema_image if cls is not None and self.config.schema_images else None
        try:
            return ActorDb(slot.path, self.config.db_max_bytes // 4096, image,
                          self.config.db_max_value_bytes)
        except (apsw.Error, OSError) as e:
            raise StorageFailed(f"{slot.ref}'s database cannot be opened: {e}") from None

    def _instance_for(self, slot: ActorSlot, creating: bool) -> Instance:
        if len(self._slots) > self.config.max_live_instances:
            self._make_room()  # now, not at the next sweep: a burst must not pile up
        cap = self.config.max_guest_output_bytes

        def output(data: bytes, past_cap: bool = False) -> int | None:
            return slot.output.write(data, cap, past_cap)

        inst = None
        if creating and self.classes[slot.ref.cls].reuse_instances:
            # Only a new actor takes a spare: its on-init is the reused instance's first
            # call, and there the SDK lets the last actor's object go.
            inst = self.spares.take(slot.ref.cls)
        if inst is None:
            inst = self._instantiate(self.classes[slot.ref.cls], output)
        else:
            inst.set_output(output)
        inst.actors_served += 1
        return inst

    def _instantiate(self, cls: ActorClass, output: Output) -> Instance:
        for evicted in (False, True):
            try:
                return Instance(self.engine, cls.linker, cls.exports,
                                self.config.memory_limit_bytes, output,
                                self.config.max_guest_output_bytes)
            except WasmtimeError as e:
                if not pool_exhausted(e):
                    raise
            if not evicted:
                # Every pooled slot holds an instance: the idle ones give theirs back.
                self.spares.drop_idle(0)
                self.evict_idle(keep=self.config.max_live_instances // 2)
        raise Overloaded("every instance slot is busy with an event; retry shortly")

    def _create(self, slot: ActorSlot, ev: Event) -> None:
        db = slot.require_db()
        db.first_host_write("INSERT OR REPLACE INTO main._wk_host_meta VALUES ('class', ?), "
                            "('id', ?), ('initialized', 0)", (slot.ref.cls, slot.ref.id))
        try:
            err = self._call(slot, ev, "on-init", ())
            if err is not None:
                raise GuestFailed(f"on-init failed: {err}")
            db.end_speculation()
        except GuestFailed as e:
            log.warning("%s: on-init failed, the actor was not created: %s", slot.ref, e)
            self._destroy(slot)
            raise GuestFailed(f"{slot.ref} could not be created: {e}") from None
        self._learn_schema(self.classes[slot.ref.cls], db)
        db.end_event()
        if crashpoints.ARMED:
            crashpoints.hit(f"init:{slot.ref.cls}")
        # Committed like an exec, not fsynced: a power loss that loses it loses every later
        # commit of this database too (WAL frames survive as a prefix), so the actor is
        # then simply not created yet; the first exec-durable makes it durable.
        db.host_exec("UPDATE main._wk_host_meta SET v = 1 WHERE k = 'initialized'")
        slot.initialized = True
        self.index.add_actor(slot.ref)

    def _learn_schema(self, cls: ActorClass, db: ActorDb) -> None:
        """After a new actor's on-init: keep its script as the class's schema image, or
        stop using the image if this on-init did something else first."""
        if db.speculation_failed:
            if cls.schema_image is not None:
                log.info("class %s: an on-init did not run the schema its image holds; "
                         "new actors start from the plain template from now on", cls.name)
            cls.schema_image, cls.schema_learning = None, False
            return
        if not (cls.schema_learning and cls.schema_image is None and self.config.schema_images):
            return
        script = db.schema_script()
        if script is not None:
            try:
                cls.schema_image = build_schema_image(script)
            except (apsw.Error, OSError) as e:  # then it is simply not kept
                log.warning("class %s: no schema image (%s)", cls.name, e)
                cls.schema_learning = False

    def _call(self, slot: ActorSlot, ev: Event, export: str, args: tuple[Any, ...]) -> Any:
        inst = slot.instance
        assert inst is not None
        wall_ms = max(0.0, ev.remaining_s() * 1000)
        try:
            return inst.call(export, args, self.config.fuel_per_event(), wall_ms)
        except GuestFailed as e:
            slot.instance = None  # a trap poisons the instance and its Store
            if slot.output.flooded:  # what the trap itself says is only its last step
                e = GuestFailed(f"the guest's output flooded: it wrote past the "
                                f"{self.config.max_guest_output_bytes}-byte cap, where "
                                f"writes fail, and then trapped ({e})")
            ev.trapped = str(e)
            raise e from None

    def _handle(self, slot: ActorSlot, ev: Event, record: Any, sender: Sender) -> Any:
        return self._call(slot, ev, "handle", (record, sender_variant(sender)))

    def _after_event(self, slot: ActorSlot, ev: Event) -> bool:
        """Settle the event's effects. True: the actor sleeps, and its instance and
        database connection go as soon as the event has left its run slot."""
        self._flush_output(slot, ev)
        db = slot.db
        if db is None:
            return False
        if db.end_event():
            log.info("%s: rolled back a transaction the event left open", slot.ref)
        self._keep_trap(slot, ev, db)
        if ev.delete_requested and slot.instance is not None:
            self._destroy(slot)
            return False
        if ev.alarm_touched or ev.kind != "request":
            self._sync_alarm(slot, fired=ev.kind == "alarm")
        now = time.monotonic()
        slot.last_used = now
        if ev.kind == "request":
            slot.last_request, slot.sleepy = now, False
        if self._asleep(slot, ev):
            if now - slot.last_request < self.config.followed_s:
                # Asked something a moment ago (a workflow just started, its client about
                # to read the result): the next question should find it warm.
                slot.sleepy = True
            else:
                return True
        elif self.config.always_fresh_instance:
            slot.instance = None
        return False

    @staticmethod
    def _keep_trap(slot: ActorSlot, ev: Event, db: ActorDb) -> None:
        """Keep why a trapped event ended, in the actor's database, for the guest's next
        events (`lifecycle.last-trap`); forget it once an event that asked for it ends
        cleanly. Committed like an exec: the reason is for the guest's bookkeeping."""
        if ev.trapped is not None:
            log.warning("%s: its %s event trapped: %s", slot.ref, ev.kind, ev.trapped)
            slot.last_trap = ev.trapped
            db.host_exec("INSERT OR REPLACE INTO main._wk_host_meta VALUES ('trap', ?)",
                         (ev.trapped,))
        elif ev.trap_read and slot.last_trap is not None:
            slot.last_trap = None
            db.host_exec("DELETE FROM main._wk_host_meta WHERE k = 'trap'")

    @staticmethod
    def _keeps_nothing(slot: ActorSlot) -> bool:
        """A new actor (its file made by this process) that has written no row of its own
        and holds no alarm: when it closes, its files go with it, so that requests to
        any number of ids leave no database per id. Not per event: a busy actor that
        keeps nothing stays warm, its file with it, until it is let go."""
        db = slot.db
        return (db is not None and db.created and not db.wrote_rows
                and not (slot.alarm_seen is not None and slot.alarm_seen.at_ms is not None))

    def _asleep(self, slot: ActorSlot, ev: Event) -> bool:
        """An alarm event that leaves the next alarm far away (or none), while live actors
        fill more than half the instance cap: the actor sleeps, so its instance (several
        MiB) and its database connection go now rather than at the idle sweep. A request
        may still come; it pays an instantiation and an open (about 1 ms)."""
        if ev.kind != "alarm" or slot.alarm_seen is None:
            return False
        if len(self._slots) <= self.config.max_live_instances // 2:
            # Room to spare: keep it warm (a parked workflow woken by events replays from
            # its cached journal); the idle sweep still drops it in time.
            return False
        at_ms = slot.alarm_seen.at_ms
        far = self.clock.now_ms() + self.config.idle_instance_s * 1000
        return at_ms is None or at_ms > far

    def _sync_alarm(self, slot: ActorSlot, fired: bool = False) -> None:
        """Tell the scheduler and the index what the actor's database now holds. After a
        fire the scheduler has let go of the actor, so it is told even an unchanged time
        (an alarm re-set to the time that just fired)."""
        row = alarms.read(slot.require_db())
        if fired or slot.alarm_seen is None or row.at_ms != slot.alarm_seen.at_ms:
            self.scheduler.set(slot.ref, row.at_ms)
            self.index.set_alarm(slot.ref, row.at_ms)
        slot.alarm_seen = row

    def _destroy(self, slot: ActorSlot) -> None:
        """Remove the actor: instance, database files, index entries and alarm."""
        self._offer_spare(slot, slot.close())
        if crashpoints.ARMED:
            crashpoints.hit(f"delete:{slot.ref.cls}")
        self._forget(slot)

    def _forget(self, slot: ActorSlot) -> None:
        """Its files, index entries and alarm (its db closed, its lock held)."""
        delete_db_files(slot.path)
        self.admission.removed()
        self.scheduler.set(slot.ref, None)
        self.index.remove_actor(slot.ref)

    # -- keeping memory and file descriptors bounded -------------------------------------
    def evict_idle(self, keep: int | None = None) -> int:
        """Drop idle actors' instances and databases: those idle past idle_instance_s (or
        followed_s, for a sleepy one), then the least recently used beyond `keep` (default
        max_live_instances). Returns how many were dropped."""
        now = time.monotonic()
        with self._slots_lock:
            slots = sorted(self._slots.values(), key=lambda s: s.last_used)
        excess = len(slots) - (self.config.max_live_instances if keep is None else keep)
        dropped = 0
        for slot in slots:
            idle_after = self.config.followed_s if slot.sleepy else self.config.idle_instance_s
            if now - slot.last_used <= idle_after and dropped >= excess:
                continue  # not idle, and the cap is kept: a sleepy one may still be
            if self._drop_slot(slot):
                dropped += 1
        return dropped

    def _make_room(self) -> None:
        """Drop the least recently used idle actors beyond the live cap: the part of
        evict_idle that a new actor's event waits for (a few, not all of them)."""
        with self._slots_lock:
            excess = len(self._slots) - self.config.max_live_instances
            if excess <= 0:
                return
            # A few more than the excess, in case some of them are busy.
            oldest = heapq.nsmallest(excess + 4, self._slots.values(),
                                     key=attrgetter("last_used"))
        for slot in oldest:
            if excess <= 0:
                break
            if self._drop_slot(slot):
                excess -= 1

    def _drop_slot(self, slot: ActorSlot) -> bool:
        with self._slots_lock:
            if slot.waiting or not slot.lock.acquire(blocking=False):
                return False
            # One whose files go as it closes stays in the table until they are gone: a
            # new event for it then waits for its lock, instead of opening those files
            # through a slot of its own meanwhile.
            forget = self._keeps_nothing(slot)
            if not forget:
                self._slots.pop(slot.ref, None)
        # Closed outside the table's lock: closing a WAL database checkpoints it, which
        # must not hold up every other event's lookup.
        try:
            self._close_slot(slot)
            if forget:
                with self._slots_lock:
                    if not slot.waiting:
                        self._slots.pop(slot.ref, None)
        finally:
            slot.lock.release()
        return True

    def _close_slot(self, slot: ActorSlot) -> None:
        """Close the actor's instance and db (the caller holds its lock, or it is not
        running), and forget an actor that keeps nothing; the instance may serve the
        class's next new actor."""
        forget = self._keeps_nothing(slot)
        self._offer_spare(slot, slot.close())
        if forget:
            self._forget(slot)

    def _offer_spare(self, slot: ActorSlot, inst: Instance | None) -> None:
        if inst is not None and self.classes[slot.ref.cls].reuse_instances:
            self.spares.offer(slot.ref.cls, inst)

    def _janitor(self) -> None:
        dropped_since_trim = 0
        while not self._stopping.wait(1.0):
            self.index.flush()
            try:
                dropped_since_trim += self.evict_idle()
            except Exception:
                log.exception("evicting idle actors failed")
            dropped_since_trim += self.spares.drop_idle(self.config.spare_idle_s)
            self._release_pool_memory(self.config.pool_release_idle_s)
            if dropped_since_trim >= _TRIM_AFTER_DROPS and _malloc_trim is not None:
                # Dropped instances and connections leave the C heap fragmented: without
                # this, 3,000 sleepers held 40 MiB more than their instances' memory.
                _malloc_trim(0)
                dropped_since_trim = 0

    def _release_pool_memory(self, idle_for_s: float = 0.0) -> None:
        """Idle pooled slots give their pages back once no instance has lived for
        `idle_for_s` (sleepers all asleep, a quiet host): 16 MiB each otherwise, for
        good. Not sooner: a slot's first use after a release costs more than a fresh
        mapping would (its reset writes all 16 MiB again), so a host between two bursts
        keeps its slots warm."""
        if self.pool_memory is None:
            return
        try:
            self.pool_memory.release_idle(idle_for_s)
        except OSError:
            log.exception("releasing the instance pool's idle memory failed")

    # -- alarms -------------------------------------------------------------------------
    def _dispatch_alarm(self, ref: ActorRef) -> None:
        self.executor.submit(self._fire_alarm, ref)

    def _fire_alarm(self, ref: ActorRef) -> None:
        deadline = time.monotonic() + self.config.wall_budget_ms / 1000
        try:
            self._run_event(ref, "alarm", Chain(), deadline, self._on_alarm, create=False)
        except _Gone:
            # Deleted since its alarm was indexed: an alarm never creates an actor.
            self.index.remove_actor(ref)
        except HostError as e:
            log.warning("%s: alarm event failed: %s", ref, e)
            self._retry_in_memory(ref)
        except Exception:
            log.exception("%s: alarm event failed", ref)
            self._retry_in_memory(ref)
        finally:
            self.scheduler.done(ref)

    def _retry_in_memory(self, ref: ActorRef) -> None:
        """The event failed before its alarm could be re-set or retried in its database
        (a full disk, say): keep trying from memory, so the actor is not forgotten until a
        restart. The database, once writable, takes over again."""
        self.scheduler.set(ref, self.clock.now_ms() + self.config.alarm_retry_base_ms)

    def _on_alarm(self, slot: ActorSlot, ev: Event) -> None:
        db = slot.require_db()
        before = alarms.read(db)
        if before.at_ms is None or before.at_ms > self.clock.now_ms():
            return  # stale: cleared or moved since it was scheduled
        failure: str | None = None
        try:
            err = self._call(slot, ev, "on-alarm", ())
            failure = None if err is None else f"on-alarm returned an error: {err}"
        except GuestFailed as e:
            failure = str(e)
        db.end_event()
        if ev.delete_requested and failure is None:
            # The actor is going away; leave its alarm as it is, so that a crash before
            # the files are gone brings the event (and its delete-self) back.
            return
        after = alarms.read(db)
        if after.gen != before.gen:
            return  # the event set or cleared the alarm: its choice wins
        if failure is None:
            alarms.host_clear(db)
            return
        delay = alarms.retry_delay_ms(before.retries, self.config.alarm_retry_base_ms,
                                      self.config.alarm_retry_max_ms)
        alarms.host_retry(db, self.clock.now_ms() + delay, before.retries + 1)
        log.warning("%s: %s; retrying in %d ms", slot.ref, failure, delay)

    # -- guest output ---------------------------------------------------------------------
    def _flush_output(self, slot: ActorSlot, ev: Event) -> None:
        text, dropped, flooded = slot.output.take()
        if not text and not dropped:
            return
        guest_log = logging.getLogger(f"wkhost.guest.{slot.ref.cls}")
        # After a trap, the guest's output is its traceback: why, in its own words.
        level = logging.INFO if ev.trapped is None else logging.WARNING
        for line in text.rstrip("\n").splitlines():
            guest_log.log(level, "[%s] %s", slot.ref, line)
        if dropped:
            guest_log.warning("[%s] %d more bytes of output dropped (cap %d per event)%s",
                              slot.ref, dropped, self.config.max_guest_output_bytes,
                              "; writes past it fail" if flooded else "")
