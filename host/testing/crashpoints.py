"""Test-only crash points: SIGKILL the host at a named moment, to prove recovery.

Inert unless the environment names a point when the process starts:

    WKHOST_CRASH_AT=sql-after:wk:result   kill right after a statement tagged wk:result
    WKHOST_CRASH_SKIP=2                   ... at its third hit instead of its first
    WKHOST_CRASH_LIST=FILE                kill nothing: append each point reached to FILE,
                                          one a line (the crash-point harness's clean run,
                                          host/testkit/crash_points.py, lists them so)

Points:
    sql-before:TAG, sql-after:TAG   a guest statement whose text starts with /*TAG*/
                                    (the workflow runner tags its statements: wk:attempt,
                                    wk:result, wk:sleep, wk:event, wk:create, ...; a
                                    tx=True step's wk:tx-begin, wk:tx-tables, wk:tx-check,
                                    wk:tx-commit, wk:tx-rollback)
    call:CLASS                      an actor call into CLASS, before the callee runs
    init:CLASS                      on-init of an actor of CLASS returned, before the
                                    actor is marked created
    delete:CLASS                    deleting an actor of CLASS (delete-self, a workflow's
                                    retention): its database closed, its files not yet gone
    schema-image                    a class's schema image made (storage/images.py), in
                                    its file beside the new actor's database, before that
                                    file is read and removed

The guest cannot read the host's environment and the WIT world has no test-only import:
the runner's tags are plain SQL comments, meaningful only to this module.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

_POINT = os.environ.get("WKHOST_CRASH_AT") or None
_skip = int(os.environ.get("WKHOST_CRASH_SKIP", "0") or 0)
_LIST = os.environ.get("WKHOST_CRASH_LIST") or None
_lock = threading.Lock()
ARMED = _POINT is not None or _LIST is not None


def sql_tag(sql: str) -> str | None:
    if not sql.startswith("/*"):
        return None
    end = sql.find("*/", 2)
    return sql[2:end].strip() if end > 0 else None


def statement(sql: str, when: str) -> None:
    """`when` is "before" or "after" a guest statement runs."""
    tag = sql_tag(sql)
    if tag is not None:
        hit(f"sql-{when}:{tag}")


def hit(point: str) -> None:
    global _skip
    if _LIST is not None:
        with _lock, open(_LIST, "a", encoding="utf-8") as f:
            f.write(point + "\n")
    if point != _POINT:
        return
    with _lock:
        if _skip > 0:
            _skip -= 1
            return
    sys.stderr.write(f"wkhost: crash point {point} reached: SIGKILL\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
