"""What a process sets up once before a Host runs in it: its data directory, SQLite's
heap limit, malloc's tuning, the stack its event threads need, and the export of
traces."""

from __future__ import annotations

import sys
import threading

from .. import tracing
from ..config import HostConfig
from ..errors import HostError
from ..runtime.memory import tune_malloc
from ..storage.index import prepare_layout
from ..storage.policy import set_heap_limit

# Each nested actor call costs several Python frames inside ctypes callbacks.
_RECURSION_LIMIT = 20_000
_THREAD_STACK_BYTES = 64 << 20


def prepare_process(config: HostConfig) -> None:
    config.data_dir.mkdir(parents=True, exist_ok=True)
    set_heap_limit(config.sql_memory_bytes)
    tune_malloc()
    if config.partition.count == 1:  # else the processes' supervisor has done it
        prepare_layout(config.data_dir, 1)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _RECURSION_LIMIT))
    threading.stack_size(_THREAD_STACK_BYTES)


def start_tracing(config: HostConfig) -> None:
    """Before any class is loaded: its host functions are wrapped in spans then."""
    try:
        targets = config.trace_targets()  # checked with traces off too: a typo shows
    except ValueError as e:
        raise HostError(f"--trace-propagate: {e}") from None
    if not config.otlp_endpoint:
        return
    tracing.export_to(config.otlp_endpoint, config.partition.me, targets)
