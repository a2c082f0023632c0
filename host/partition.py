"""Which process of a host serves which actor, for `wkhost serve --processes N`.

Why more than one process: the host's Python (the front door, the crossings, SQLite
calls) holds the GIL, so one process runs about one core's worth of events however many
cores the machine has. N processes each own a fixed share of the actors and run their
events on their own GIL.

An actor belongs to process `int(shard, 16) % N`, where `shard` is the first byte of
its id's sha256: the directory its database is in (paths.db_path). So the processes'
files never mix within a directory, and each process's index can be rebuilt from the
directories it owns. Which process answers a client does not matter: one that gets a
request for another's actor passes it on (host/net/peers.py).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .placement import HERE, Where


@dataclass(frozen=True)
class Partition:
    me: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.me < self.count:
            raise ValueError(f"process {self.me} of {self.count} does not exist")

    def owner(self, actor_id: str) -> int:
        return shard_of(actor_id) % self.count

    def where(self, actor_id: str) -> Where:
        """The placement port's answer in process mode (host/placement.py)."""
        if self.count == 1:
            return HERE
        owner = self.owner(actor_id)
        return HERE if owner == self.me else Where(False, process=owner)

    def owns_shard(self, shard: str) -> bool:
        return self.count == 1 or int(shard, 16) % self.count == self.me

    def host_dir(self, data_dir: Path) -> Path:
        """This process's own files: its index, its running marker, its socket."""
        base = data_dir / "_host"
        return base if self.count == 1 else base / f"process-{self.me}-of-{self.count}"

    def socket_of(self, data_dir: Path, process: int) -> Path:
        """The Unix socket on which process `process` takes requests from the others: in
        its own directory, or, where that path is too long for a socket's address (108
        bytes on Linux), in a directory of this user's under /tmp named after the data
        directory."""
        path = Partition(process, self.count).host_dir(data_dir) / "peer.sock"
        if len(os.fsencode(path.absolute())) < _MAX_SOCKET_PATH:
            return path
        digest = hashlib.sha256(os.fsencode(data_dir.absolute())).hexdigest()[:16]
        short = Path(tempfile.gettempdir()) / f"wkhost-{os.getuid()}" / digest
        return short / f"process-{process}-of-{self.count}.sock"


_MAX_SOCKET_PATH = 100


def shard_of(actor_id: str) -> int:
    return hashlib.sha256(actor_id.encode("utf-8")).digest()[0]
