"""on-init, traps, delete-self, and ids: with a real component on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wkhost.errors import GuestFailed

from .support import Probe


def db_files(p: Probe) -> list[Path]:
    return sorted((p.host.config.data_dir / "actors").rglob("*.db"))


def test_on_init_runs_once_before_the_first_event(probe: Probe) -> None:
    probe.json("a", "GET", "/now")
    probe.json("a", "GET", "/now")
    rows = probe.json("a", "GET", "/log")["rows"]
    assert [r[0] for r in rows] == ["init"]


def test_each_class_has_a_linker_of_its_own_whose_functions_are_pinned(probe: Probe) -> None:
    """fastconv trusts a pinned host function's first signature: that holds only while
    its Linker instantiates one component, so two classes never share one."""
    from wasmtime.component import _linker as wt_linker
    from wkhost.engine import fastconv

    classes = probe.host.classes
    assert classes["probe"].linker is not classes["inner"].linker

    def pinned_exec() -> set[int]:
        return {i for i in fastconv._pinned if wt_linker.FUNCTIONS.get(i).__name__ == "_exec"}

    before = pinned_exec()
    for _ in range(2):
        probe.sql("p", "SELECT ?", [1])
        probe.json("i", "POST", "/sql", {"sql": "SELECT ?", "params": [2]}, cls="inner")
    assert len(pinned_exec() - before) == 2  # sqlite's exec: one per class's Linker


def test_a_trap_in_on_init_leaves_nothing_and_the_next_event_tries_again(probe: Probe) -> None:
    for _ in range(2):
        with pytest.raises(GuestFailed, match="could not be created"):
            probe.send("init-trap-1", "GET", "/now")
        assert db_files(probe) == []
        assert probe.host.list_actors("probe") == []


def test_on_init_that_failed_runs_again_and_completes(probe: Probe) -> None:
    # The probe's on-init traps for an "init-trap-until-<ms>" id while the host clock is
    # before <ms>: the first event fails, and once time has passed, on-init runs again.
    actor_id = f"init-trap-until-{probe.clock.now_ms() + 1000}"
    with pytest.raises(GuestFailed):
        probe.send(actor_id, "GET", "/now")
    probe.clock.jump(1000)
    assert [r[0] for r in probe.json(actor_id, "GET", "/log")["rows"]] == ["init"]
    assert probe.host.list_actors("probe") == [actor_id]


def test_an_error_from_on_init_is_a_failed_creation_too(probe: Probe) -> None:
    with pytest.raises(GuestFailed, match="init refused by probe"):
        probe.send("init-err-1", "GET", "/now")
    assert db_files(probe) == []


def test_a_trapped_actor_is_served_again_by_a_fresh_instance(probe: Probe) -> None:
    probe.sql("t", "CREATE TABLE k (v)")
    probe.sql("t", "INSERT INTO k VALUES (1)")
    with pytest.raises(GuestFailed, match="the guest raised RuntimeError: probe: trap requested"):
        probe.send("t", "POST", "/trap")
    assert probe.sql("t", "SELECT v FROM k")["rows"] == [[1]]


def test_delete_self_removes_the_database_and_the_alarm(probe: Probe) -> None:
    probe.json("d", "POST", "/alarm/set", query=f"at={probe.clock.now_ms() + 60_000}")
    assert probe.host.scheduler.pending() == 1
    probe.json("d", "POST", "/delete-self")
    assert db_files(probe) == []
    assert probe.host.scheduler.pending() == 0
    assert probe.host.list_actors("probe") == []
    # The next event creates it anew: on-init again, and nothing of the old one.
    assert [r[0] for r in probe.json("d", "GET", "/log")["rows"]] == ["init"]
    assert probe.json("d", "GET", "/alarm")["at"] is None


def test_a_traversal_id_stays_inside_the_data_directory(probe: Probe) -> None:
    for actor_id in ["../../etc/passwd", "..", "/abs", "a\\..\\b"]:
        probe.json(actor_id, "GET", "/now")
    data = probe.host.config.data_dir.resolve()
    files = db_files(probe)
    assert len(files) == 4
    assert all(f.resolve().is_relative_to(data / "actors" / "probe") for f in files)
    assert sorted(probe.host.list_actors("probe")) == sorted(
        ["../../etc/passwd", "..", "/abs", "a\\..\\b"])


def test_instances_never_serve_two_ids(probe: Probe) -> None:
    a = probe.json("x", "GET", "/whoami")
    b = probe.json("y", "GET", "/whoami")
    assert a["self"] == ["probe", "x"] and b["self"] == ["probe", "y"]
    slots = probe.host._table.by_ref
    assert slots[probe.host.actor_ref("probe", "x")].instance is not \
        slots[probe.host.actor_ref("probe", "y")].instance


def said(p: Probe, actor: str, path: str, text: str) -> list[str]:
    """POST `text` to the probe's /remember or /mine: what it now holds."""
    doc = json.loads(p.send(actor, "POST", path, text).body)
    return list(doc["remembered" if path == "/remember" else "mine"])


def test_without_reuse_an_evicted_instance_serves_no_other_actor(make_probe) -> None:  # type: ignore[no-untyped-def]
    p = make_probe(max_live_instances=1, idle_instance_s=3600)
    assert said(p, "a", "/remember", "a") == ["a"]
    assert said(p, "b", "/remember", "b") == ["b"]  # a was evicted
    assert p.host.spares.taken == 0 and p.host.spares.count() == 0


def test_a_reused_instance_serves_a_new_actor_with_a_new_actor_object(
        make_probe, caplog) -> None:  # type: ignore[no-untyped-def]
    """--reuse-instances: an evicted actor's instance creates the class's next new actor.
    Module globals carry over (documented); the actor object and the output do not."""
    p = make_probe(max_live_instances=1, idle_instance_s=3600, reuse_instances=True)
    assert said(p, "a", "/remember", "a") == ["a"]
    assert said(p, "a", "/mine", "a") == ["a"]
    # b is new: creating it evicts a, whose instance runs b's on-init first.
    assert said(p, "b", "/mine", "b") == ["b"]
    assert p.host.spares.taken == 1
    assert said(p, "b", "/remember", "b") == ["a", "b"]
    assert p.json("b", "GET", "/whoami")["self"] == ["probe", "b"]
    assert p.json("b", "POST", "/query", {"sql": "SELECT kind FROM log"})["rows"] == [["init"]]
    with caplog.at_level("INFO", logger="wkhost.guest.probe"):
        p.send("b", "POST", "/print")
    printed = [r.getMessage() for r in caplog.records if "probe stdout 0" in r.getMessage()]
    assert printed and all(m.startswith("[probe/b]") for m in printed), printed

    # a exists: waking it never takes a spare (no on-init would come first), so it gets
    # a fresh instance, and b's instance waits for the next new actor.
    assert said(p, "a", "/remember", "a2") == ["a2"]
    assert said(p, "a", "/mine", "a2") == ["a2"]
    assert p.host.spares.taken == 1 and p.host.spares.count() == 1
    # Creating c evicts a, and takes the newest spare: a's instance, whose pages are the
    # likeliest to be resident.
    assert said(p, "c", "/mine", "c") == ["c"]
    assert said(p, "c", "/remember", "c") == ["a2", "c"]
    assert p.host.spares.taken == 2 and p.host.spares.count() == 1


def test_a_trapped_instance_is_never_reused(make_probe) -> None:  # type: ignore[no-untyped-def]
    p = make_probe(max_live_instances=1, idle_instance_s=3600, reuse_instances=True)
    assert said(p, "t", "/remember", "t") == ["t"]
    with pytest.raises(GuestFailed):
        p.send("t", "POST", "/trap")
    p.host.config.idle_instance_s = 0
    p.host.evict_idle()  # t's slot goes, with no instance to offer
    assert said(p, "n", "/remember", "n") == ["n"]
    assert p.host.spares.taken == 0


def test_an_actor_deleted_and_created_again_gets_a_new_actor_object(make_probe) -> None:  # type: ignore[no-untyped-def]
    p = make_probe(reuse_instances=True)
    assert said(p, "d", "/mine", "x") == ["x"]
    p.send("d", "POST", "/delete-self")
    assert said(p, "d", "/mine", "y") == ["y"]
    assert p.host.spares.taken == 1  # its own instance, through a new on-init
    assert said(p, "d", "/remember", "y") == ["y"]


def test_spare_instances_go_when_idle_and_at_close(make_probe) -> None:  # type: ignore[no-untyped-def]
    p = make_probe(max_live_instances=1, idle_instance_s=3600, reuse_instances=True,
                   spare_idle_s=3600)
    for name in ("a", "b", "c"):
        p.json(name, "GET", "/whoami")
    p.host.config.idle_instance_s = 0
    p.host.evict_idle()
    assert p.host.spares.count() == 1
    assert p.host.spares.drop_idle(3600) == 0
    assert p.host.spares.drop_idle(0) == 1
    pool = p.host.pool_memory
    assert pool is not None and pool.live == 0  # so the pool may be released


def test_an_instance_starts_with_its_import_time_objects_frozen(probe: Probe) -> None:
    """The snapshot's objects sit in the permanent generation, so a collection in a new
    instance neither walks nor writes to their copy-on-write pages; the collector still
    runs for what the instance itself makes."""
    st = probe.json("fresh", "GET", "/gc")
    assert st["enabled"] is True
    assert st["frozen"] > 10_000  # the interpreter's, the SDK's and the app's objects
    assert st["tracked"] < st["frozen"] // 10  # what the collector still walks


def test_a_pooled_memory_slot_carries_nothing_to_the_next_instance(make_probe) -> None:  # type: ignore[no-untyped-def]
    import json

    p = make_probe(max_live_instances=1, idle_instance_s=3600, instance_pool=True)

    def remember(actor: str, text: str) -> list[str]:
        return json.loads(p.send(actor, "POST", "/remember", text).body)["remembered"]

    assert remember("x", "x-secret") == ["x-secret"]
    assert remember("x", "x-again") == ["x-secret", "x-again"]
    for _ in range(3):  # x's slot is freed and taken again, by y and then by x itself
        p.host.config.idle_instance_s = 0
        p.host.evict_idle()
        p.host.config.idle_instance_s = 3600
        assert remember("y", "y") == ["y"]
        p.host.evict_idle()
        assert remember("x", "x") == ["x"]


def test_idle_pooled_slots_give_their_pages_back_only_while_no_instance_lives(
        make_probe) -> None:  # type: ignore[no-untyped-def]
    import json

    from wkhost.engine.instance import Instance

    p = make_probe(max_live_instances=8, idle_instance_s=3600, instance_pool=True)
    pool = p.host.pool_memory
    assert pool is not None and len(pool.regions) == 1  # the memories' reservation

    def remember(actor: str, text: str) -> list[str]:
        return json.loads(p.send(actor, "POST", "/remember", text).body)["remembered"]

    for name in ("a", "b", "c"):
        assert remember(name, name) == [name]
    assert pool.live == 3
    assert not pool.release_idle()  # refused: it would wipe the live instances' heaps
    assert remember("a", "a2") == ["a", "a2"]  # and so a's is whole

    # An instance made outside the host's actors counts too, as long as it exists; it
    # also keeps the janitor from releasing anything until this test does.
    held = Instance(p.host.engine, p.host.classes["probe"].linker, p.host.classes["probe"].exports,
                    64 << 20, lambda _d: None)
    p.host.config.idle_instance_s = 0
    p.host.evict_idle()
    assert pool.live == 1 and not pool.release_idle()
    # The three freed slots were reset in place, keeping their heaps' pages written
    # (about 11 MiB each here, the held instance about 8).
    assert pool.resident_bytes() > 3 * (8 << 20)
    del held
    assert pool.live == 0
    assert not pool.release_idle(idle_for_s=3600)  # the janitor waits for a quiet spell
    assert pool.resident_bytes() > 3 * (8 << 20)
    assert pool.release_idle()
    assert pool.resident_bytes() < 1 << 20

    # Instances made in released slots start from the component's image, and clean.
    p.host.config.idle_instance_s = 3600
    for name in ("a", "b", "c", "d"):
        assert remember(name, "again") == ["again"]
    assert p.json("a", "GET", "/gc")["frozen"] > 10_000  # the snapshot's heap is there


def test_releases_racing_instances_never_touch_a_live_one(make_probe, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import json
    import threading
    import time

    from wkhost.engine import pool as engine

    p = make_probe(idle_instance_s=3600, instance_pool=True)
    pool = p.host.pool_memory
    assert pool is not None
    released = []
    real_madvise = engine._madvise

    def counted(addr: int, length: int, advice: int) -> None:
        released.append(addr)
        real_madvise(addr, length, advice)

    monkeypatch.setattr(engine, "_madvise", counted)
    done = threading.Event()

    def release_all_the_time() -> None:
        while not done.is_set():
            pool._used_since_release = True  # so that every call tries a whole release
            pool.release_idle()

    releaser = threading.Thread(target=release_all_the_time)
    releaser.start()
    try:
        for i in range(10):  # each time a new instance, used a few times, then dropped
            for n in range(1, 4):
                got = json.loads(p.send(f"r{i}", "POST", "/remember", str(n)).body)
                assert got["remembered"] == [str(k) for k in range(1, n + 1)], (i, got)
                time.sleep(0.02)  # the releaser runs meanwhile: it must leave this heap be
            p.host.config.idle_instance_s = 0
            p.host.evict_idle()
            p.host.config.idle_instance_s = 3600
    finally:
        done.set()
        releaser.join()
    assert released  # the releases did run between the instances


def test_without_the_pool_instances_come_and_go_the_same(make_probe) -> None:  # type: ignore[no-untyped-def]
    import json

    p = make_probe(max_live_instances=1, idle_instance_s=3600, instance_pool=False)
    assert p.host.pool_memory is None

    def remember(actor: str, text: str) -> list[str]:
        return json.loads(p.send(actor, "POST", "/remember", text).body)["remembered"]

    assert remember("x", "x1") == ["x1"]
    assert remember("x", "x2") == ["x1", "x2"]
    assert remember("y", "y") == ["y"]  # over the cap of one: x's instance goes
    assert remember("x", "x3") == ["x3"]
    assert p.json("x", "GET", "/gc")["frozen"] > 10_000


def test_when_every_pooled_slot_is_taken_idle_actors_make_room_else_a_clear_refusal(
        make_probe) -> None:  # type: ignore[no-untyped-def]
    import pytest
    from wkhost.engine.instance import Instance
    from wkhost.errors import Overloaded

    p = make_probe(max_live_instances=4, workers=1, idle_instance_s=3600, instance_pool=True)
    host = p.host
    slots = host.config.pool().instances  # 4 live + 4 per worker
    for name in ("a", "b", "c"):  # three idle actors, under the live cap
        p.send(name, "GET", "/now")

    def hold() -> Instance:
        cls = host.classes["probe"]
        return Instance(host.engine, cls.linker, cls.exports, 64 << 20, lambda _d: None)

    held = [hold() for _ in range(slots - 3)]  # now every slot is taken
    # The pool is full: the least recently used idle actors give back their slots.
    assert p.send("new", "GET", "/now").status == 200
    live = {ref.id for ref, slot in host._table.by_ref.items() if slot.instance is not None}
    assert live == {"c", "new"}
    held.append(hold())  # full again, and nothing idle is left to drop but c and new
    host._table.by_ref[host.actor_ref("probe", "c")].lock.acquire()  # c and new are busy
    host._table.by_ref[host.actor_ref("probe", "new")].lock.acquire()
    with pytest.raises(Overloaded, match="every instance slot is busy"):
        p.send("late", "GET", "/now")
    held.pop()
    assert p.send("late", "GET", "/now").status == 200
    host._table.by_ref[host.actor_ref("probe", "c")].lock.release()
    host._table.by_ref[host.actor_ref("probe", "new")].lock.release()


def test_idle_instances_are_evicted_and_their_actors_come_back_intact(make_probe) -> None:  # type: ignore[no-untyped-def]
    p = make_probe(max_live_instances=2, idle_instance_s=3600)
    for i in range(5):
        p.sql(f"e{i}", "CREATE TABLE t (v)")
        p.sql(f"e{i}", "INSERT INTO t VALUES (?)", [i])
    # Evicted as new instances came, not at the next sweep: never far past the cap.
    assert len(p.host._table.by_ref) <= 3
    p.host.evict_idle()
    assert len(p.host._table.by_ref) == 2
    for i in range(5):
        assert p.sql(f"e{i}", "SELECT v FROM t")["rows"] == [[i]]
    p.host.config.idle_instance_s = 0
    p.host.evict_idle()
    assert p.host._table.by_ref == {}


def test_the_host_wide_queue_is_bounded_with_a_clear_refusal(make_probe) -> None:  # type: ignore[no-untyped-def]
    import threading

    import pytest
    from wkhost.errors import Overloaded

    p = make_probe(max_pending_events=2)
    gate = threading.Event()
    held = [p.host.submit(gate.wait, 10) for _ in range(2)]
    with pytest.raises(Overloaded, match="limit of waiting events"):
        p.host.submit(lambda: None)
    gate.set()
    for f in held:
        f.result(5)
    assert p.host.submit(lambda: 42).result(5) == 42


def test_the_janitor_gives_freed_heap_back_after_dropping_many_instances(
        make_probe, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from wkhost.runtime import memory as runtime

    from .support import wait_until

    trims: list[int] = []
    monkeypatch.setattr(runtime, "_malloc_trim", lambda pad: trims.append(pad) or 1)
    p = make_probe(idle_instance_s=3600)
    for i in range(runtime._TRIM_AFTER_DROPS):
        p.send(f"t{i}", "GET", "/now")
    assert trims == []
    p.host.config.idle_instance_s = 0  # the next sweep drops them all
    assert wait_until(lambda: trims == [0], timeout=5)
    assert p.host._table.by_ref == {}
