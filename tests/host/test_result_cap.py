"""A statement's result is counted as it comes (issue 36, item 3): a query's past what the
event could receive (its instance's memory, --memory-mb) is refused with an SQL error,
and a write's rows are never kept at all."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from wkhost.config import MiB

from .support import MakeProbe, Probe

MEMORY = 64 * MiB


def rows_of(n: int, size: int) -> str:
    """A statement whose result is `n` rows of one blob of `size` bytes each."""
    return (f"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n}) "
            f"SELECT zeroblob({size}) FROM c")


def post(probe: Probe, route: str, sql: str) -> dict[str, object]:
    resp = probe.send("a", "POST", route, json.dumps({"sql": sql, "params": []}))
    assert resp.status == 200, (resp.status, resp.body[:300])
    out: dict[str, object] = json.loads(resp.body)
    return out


@pytest.mark.parametrize("route", ["/sql", "/query"])
def test_a_result_past_the_events_memory_is_an_sql_error(make_probe: MakeProbe,
                                                        route: str) -> None:
    probe = make_probe(memory_limit_bytes=MEMORY)
    out = post(probe, route, rows_of(5, 16 * MiB))  # 80 MiB of blobs
    error = str(out.get("error"))
    assert "result" in error and "--memory-mb" in error, out
    # The actor goes on; a result within the cap is answered.
    rows = post(probe, route, rows_of(3, 1000))["rows"]
    assert isinstance(rows, list) and len(rows) == 3, rows


def test_a_writes_rows_are_never_kept(make_probe: MakeProbe) -> None:
    """`exec-write` returns only the count of changed rows: what its statement returns is
    dropped row by row, never gathered (tracemalloc sees the host's Python memory)."""
    probe = make_probe(memory_limit_bytes=MEMORY)
    post(probe, "/write", "CREATE TABLE t (x)")
    tracemalloc.start()
    try:
        out = post(probe, "/write", "INSERT INTO t VALUES (1) RETURNING zeroblob(1); "
                   + rows_of(12, 8 * MiB))  # 96 MiB of rows, none of them wanted
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "error" not in out, out
    assert peak < 40 * MiB, peak
    assert post(probe, "/sql", "SELECT count(*) FROM t")["rows"] == [[1]]
