"""Which process serves which actor (host/partition.py)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from wkhost.errors import HostError
from wkhost.net.serve import prepare_socket_dir
from wkhost.partition import Partition
from wkhost.placement import HERE, Where
from wkhost.storage.paths import db_path


def test_an_actor_belongs_to_the_process_of_its_databases_directory() -> None:
    for count in (1, 2, 3, 8):
        processes = [Partition(k, count) for k in range(count)]
        for i in range(300):
            actor_id = f"id-{i}"
            shard = db_path(Path("d"), "c", actor_id).parent.name
            owners = [p.me for p in processes if p.where(actor_id).here]
            assert owners == [processes[0].owner(actor_id)]
            assert [p.me for p in processes if p.owns_shard(shard)] == owners


def test_the_placement_port_says_here_or_which_process() -> None:
    """Partition.where, the placement port in process mode (host/placement.py)."""
    assert Partition().where("anything") == HERE
    for count in (2, 3):
        for me in range(count):
            p = Partition(me, count)
            for i in range(100):
                where = p.where(f"id-{i}")
                assert where.here == (p.owner(f"id-{i}") == me)
                assert where == (HERE if where.here else Where(False, process=p.owner(f"id-{i}")))


def test_one_process_owns_everything_and_keeps_the_old_layout(tmp_path: Path) -> None:
    one = Partition()
    assert one.where("anything").here and one.owns_shard("ff")
    assert one.host_dir(tmp_path) == tmp_path / "_host"
    assert Partition(1, 2).host_dir(tmp_path) == tmp_path / "_host" / "process-1-of-2"


def test_a_socket_path_too_long_for_an_address_moves_under_tmp() -> None:
    # Paths only: nothing is made. Not tmp_path, whose length is pytest's (a worker's
    # tmp_path under pytest-xdist was already too long to stay in place).
    data = Path("/srv/wk")
    short = Partition(0, 2).socket_of(data, 1)
    assert short == data / "_host" / "process-1-of-2" / "peer.sock"
    deep = data / ("x" * 120)
    moved = Partition(0, 2).socket_of(deep, 1)
    assert len(str(moved)) < 100 and moved.name == "process-1-of-2.sock"
    assert moved == Partition(1, 2).socket_of(deep, 1)  # every process agrees where


def test_a_process_outside_the_count_is_refused() -> None:
    with pytest.raises(ValueError):
        Partition(2, 2)


def test_the_sockets_directory_under_tmp_must_be_this_users_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    mine = tmp_path / f"wkhost-{os.getuid()}"
    d = mine / "digest"
    prepare_socket_dir(d)  # made: 0700, both levels
    assert [stat.S_IMODE(p.stat().st_mode) for p in (mine, d)] == [0o700, 0o700]
    # Made first by another user (here, another uid), or a link: refused.
    os.chown(mine, os.getuid() + 4242, -1)
    with pytest.raises(HostError, match="directory of this user's"):
        prepare_socket_dir(d)
    os.chown(mine, os.getuid(), -1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    d.rmdir()
    mine.rmdir()
    mine.symlink_to(elsewhere)
    with pytest.raises(HostError, match="directory of this user's"):
        prepare_socket_dir(d)
