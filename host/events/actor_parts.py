"""The actors' side of an event, the parts it is handed (beside the runtime's places,
runtime/run_places.py, and settle): the classes, the actors' slots (slot_table.py: the
actors kept in memory) and locks (the call graph), where an instance comes from and how a
guest export is called, their alarms, held requests and index rows, letting actors go
(eviction), and in cluster mode where an actor's working copy comes from
(replication/restore.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..storage.index import Index
from .alarms import Alarms
from .call_graph import CallGraph
from .classes import ActorClass
from .eviction import Eviction
from .holds import Holds
from .instance_source import InstanceSource
from .seams import CallExport
from .slot_table import SlotTable

if TYPE_CHECKING:
    from ..replication.restore import Replication


@dataclass(frozen=True, slots=True)
class ActorParts:
    classes: dict[str, ActorClass]
    slots: SlotTable
    graph: CallGraph
    instances: InstanceSource
    call_export: CallExport
    alarms: Alarms
    holds: Holds
    index: Index
    eviction: Eviction
    replication: Replication | None = None
