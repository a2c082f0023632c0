"""storage/images.remove_leftovers: what a host killed while making a schema image left,
removed by the host's own names for it, in the shards this process owns, and nothing
else (an actor's files, a file of another name, one outside the actors' directories, a
shard another process owns, a link)."""

from __future__ import annotations

from pathlib import Path

from wkhost.partition import Partition
from wkhost.storage import images

WORK = "wk-schema-4242.139872.image"
LEFT = [WORK, f"{WORK}-wal", f"{WORK}-shm", f"{WORK}-journal", f"{WORK}.new4242.139872"]
NOT_LEFT = [
    "wk-schema-1.2.image.db", "wk-schema-1.2e2.2eimage.db",  # actors' files
    "wk-schema-1.2.image.db-wal", "wk-schema-x.2.image", "wk-schema-1.2.imagex",
    "wk-schema-notes.txt", "wk-schema-1.2.image-wal2", "a.db",
]


def plant(d: Path, names: list[str]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_text(n)


def test_the_host_s_names_are_removed_and_nothing_else(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shard = data / "actors" / "c" / "0a"
    plant(shard, LEFT + NOT_LEFT)
    plant(data / "actors" / "c" / "zz", [WORK])  # not a shard's directory
    plant(data / "actors", [WORK])  # not in a shard
    plant(data / "_host", [WORK])
    target = tmp_path / "outside"
    target.write_text("outside")
    (data / "actors" / "c" / "0b").mkdir()
    (data / "actors" / "c" / "0b" / WORK).symlink_to(target)

    assert images.remove_leftovers(data, Partition(0, 1).owns_shard) == len(LEFT)
    assert sorted(p.name for p in shard.iterdir()) == sorted(NOT_LEFT)
    for kept in (data / "actors" / "c" / "zz" / WORK, data / "actors" / WORK,
                 data / "_host" / WORK, data / "actors" / "c" / "0b" / WORK):
        assert kept.exists()
    assert target.read_text() == "outside"


def test_only_the_shards_this_process_owns(tmp_path: Path) -> None:
    data = tmp_path / "data"
    mine, theirs = Partition(0, 2), Partition(1, 2)
    shards = {s: data / "actors" / "c" / s for s in ("00", "01")}
    for d in shards.values():
        plant(d, [WORK])
    assert images.remove_leftovers(data, mine.owns_shard) == 1
    assert [s for s, d in shards.items() if (d / WORK).exists()] == ["01"]
    assert images.remove_leftovers(data, theirs.owns_shard) == 1
    assert not any((d / WORK).exists() for d in shards.values())


def test_a_data_directory_without_actors(tmp_path: Path) -> None:
    assert images.remove_leftovers(tmp_path, Partition(0, 1).owns_shard) == 0
