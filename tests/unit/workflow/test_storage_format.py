"""The golden histories (golden/*.json) against the written storage format,
docs/storage-format.md: they are its executable examples.

The columns and the kinds are read from the page itself (its `CREATE TABLE` blocks and
its table of kinds), and the values are decoded by a decoder written from the page's
"Value encoding" alone: nothing of the runner is imported, so that the page, not the
code, is what is checked. Every row must have exactly the documented columns, of their
types; every kind must be a documented one, with the columns its row needs; pending
entries only at the end; every stored value must decode and encode back to the same text,
with its tagged flag set exactly when it holds a tag.
"""

from __future__ import annotations

import base64
import json
import math
import re
import sqlite3
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "storage-format.md"
GOLDEN = Path(__file__).parent / "golden"

# The golden files' keys for the tables beyond a history's three (the page's Examples).
EXTRA = {"emitted": "_wk_wf_emit", "branches": "_wk_wf_branch", "runs": "_wk_wf_run",
         "children": "_wk_wf_child", "parent": "_wk_wf_parent",
         # not in any golden file: the databases of tests/e2e/data/wf_9401b45 have them
         "attempts": "_wk_wf_attempt", "saga": "_wk_wf_saga", "pause": "_wk_wf_pause"}
OUTCOMES = {"returned", "failed", "timed-out", "cut"}
CORE = {"instance": "_wk_wf", "steps": "_wk_wf_step", "events": "_wk_wf_event"}
STATES = {"running", "waiting", "compensating", "paused", "parked", "completed", "failed",
          "cancelled", "terminated"}
BRANCH_FINAL = set("STXZEFO")
TAGGED_KINDS = set("TF")
INT_MIN, INT_MAX = -(2**64), 2**64 - 1
RUN_ID = re.compile(r"[0-9a-f]{16}")
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
CHILD_PREFIX = "\x02child "


# -- the page ------------------------------------------------------------------------------

def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def ddl_statements() -> list[str]:
    """Every CREATE statement of the page's ```sql blocks, but the proposed one."""
    out = []
    for block in re.findall(r"```sql\n(.*?)```", doc_text(), re.S):
        for stmt in re.split(r"\n(?=CREATE )", block.strip()):
            if "_wk_wf_format" not in stmt:
                out.append(stmt.strip())
    return out


def documented_tables() -> dict[str, list[tuple[str, str, bool]]]:
    """table -> [(column, type, not null)], in order, from the page's CREATE TABLEs."""
    tables = {}
    for stmt in ddl_statements():
        m = re.match(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*)\)", " ".join(stmt.split()))
        if not m:
            continue
        cols = []
        for part in m.group(2).split(","):
            words = part.split()
            if len(words) > 1 and words[1] in ("INTEGER", "TEXT"):
                cols.append((words[0], words[1], "NOT NULL" in part or "PRIMARY KEY" in part))
        tables[m.group(1)] = cols
    return tables


def documented_kinds() -> dict[str, bool]:
    """kind letter -> final?, from the page's table of kinds."""
    kinds = {}
    for letter, final in re.findall(r"^\| `(\w)` \| (final|pending) \|", doc_text(), re.M):
        kinds[letter] = final == "final"
    return kinds


# -- the value encoding, as the page writes it ---------------------------------------------

def _parse_int(s: str) -> int:
    n = int(s)
    if not INT_MIN <= n <= INT_MAX:
        raise ValueError(f"int {s} out of range")
    return n


def parse(text: str) -> Any:
    """JSON with the tokens NaN, Infinity, -Infinity; ints in range."""
    return json.loads(text, parse_int=_parse_int)


def _strings(v: Any) -> Iterator[str]:
    """Every string value (not map key) in `v`."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)


def _untag(v: Any) -> Any:
    if isinstance(v, str) and v[:1] == "\x00":
        tag, body = v[1:2], v[2:]
        if tag == "b":
            return base64.b64decode(body, validate=True)
        if tag == "s":
            return body
        raise ValueError(f"unknown tag {tag!r}")
    if isinstance(v, list):
        return [_untag(x) for x in v]
    if isinstance(v, dict):
        return {k: _untag(x) for k, x in v.items()}
    return v


def decode(text: str, tagged: bool) -> Any:
    """A stored value. Raises ValueError where the page's rules are broken."""
    raw = parse(text)
    has_tag = any(s[:1] == "\x00" for s in _strings(raw))
    if has_tag != tagged:
        raise ValueError(f"tagged flag {tagged} for a value {'with' if has_tag else 'without'}"
                         f" tags: {text[:80]!r}")
    return _untag(raw) if tagged else raw


def _tag(v: Any) -> Any:
    if isinstance(v, bytes):
        return "\x00b" + base64.b64encode(v).decode("ascii")
    if isinstance(v, str):
        return "\x00s" + v if v[:1] == "\x00" else v
    if isinstance(v, list):
        return [_tag(x) for x in v]
    if isinstance(v, dict):
        return {k: _tag(x) for k, x in v.items()}
    return v


def _needs_tags(v: Any) -> bool:
    if isinstance(v, bytes):
        return True
    if isinstance(v, str):
        return v[:1] == "\x00"
    if isinstance(v, list):
        return any(_needs_tags(x) for x in v)
    if isinstance(v, dict):
        return any(_needs_tags(x) for x in v.values())
    return False


def dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def encode(value: Any) -> tuple[str, bool]:
    tagged = _needs_tags(value)
    return dumps(_tag(value) if tagged else value), tagged


# -- checking a history against the page ---------------------------------------------------

class Checker:
    def __init__(self, where: str) -> None:
        self.where = where
        self.problems: list[str] = []
        self.tables = documented_tables()
        self.kinds = documented_kinds()

    def fail(self, what: str) -> None:
        self.problems.append(f"{self.where}: {what}")

    def value(self, what: str, text: Any, tagged: bool) -> Any:
        """Decode a stored value and check that it encodes back to its text."""
        if not isinstance(text, str):
            self.fail(f"{what}: a stored value must be TEXT, not {text!r}")
            return None
        try:
            value = decode(text, tagged)
        except ValueError as e:
            self.fail(f"{what}: {e}")
            return None
        if encode(value) != (text, tagged):
            self.fail(f"{what}: {text[:80]!r} does not encode back to itself: "
                      f"{encode(value)[0][:80]!r}")
        return value

    def rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        cols = self.tables[table]
        for row in rows:
            if list(row) != [c for c, _, _ in cols]:
                self.fail(f"{table} columns {list(row)}, documented {[c for c, _, _ in cols]}")
                continue
            for col, typ, not_null in cols:
                v = row[col]
                if v is None:
                    if not_null:
                        self.fail(f"{table}.{col} is NULL")
                elif (typ == "INTEGER") != (type(v) is int):
                    self.fail(f"{table}.{col} = {v!r} is not {typ}")

    def name(self, what: str, name: str) -> None:
        bare = name.removeprefix(CHILD_PREFIX)
        if not 0 < len(name) <= 256 or any(c < " " for c in bare):
            self.fail(f"{what}: name {name!r} breaks the naming rule")

    def history(self, doc: dict[str, Any]) -> None:
        if doc.get("format") != "wk-workflow-history/1":
            self.fail(f"format {doc.get('format')!r}")
        for key, table in {**CORE, **EXTRA}.items():
            if key in doc:
                got = doc[key]
                self.rows(table, [got] if isinstance(got, dict) else got)
        inst = doc["instance"]
        self.instance(inst)
        self.journal(doc["steps"], inst["run_id"], {r["seq"]: r for r in doc.get("emitted", [])})
        for e in doc["events"]:
            self.name(f"event {e['seq']}", e["name"])
            self.value(f"event {e['seq']}", e["payload"], bool(e["tagged"]))
        self.emitted(doc.get("emitted", []))
        self.branches(doc.get("branches", []), {s["pos"]: s["kind"] for s in doc["steps"]})
        for r in doc.get("runs", []):
            if r["id"] != 1 or r["runs"] < 2 or not RUN_ID.fullmatch(r["previous_run_id"]):
                self.fail(f"_wk_wf_run row {r}")
        for c in doc.get("children", []):
            if c["started_at"] is not None and not re.fullmatch(r"[0-9a-f]{16}/-?\d+",
                                                                  c["started_at"]):
                self.fail(f"_wk_wf_child.started_at {c['started_at']!r}")
            if c["cancel"] not in (0, 1, 2) or c["detached"] not in (0, 1):
                self.fail(f"_wk_wf_child row {c}")
        self.attempts(doc.get("attempts", []), doc["steps"], doc.get("branches", []))
        for r in doc.get("saga", []):
            if r["id"] != 1 or not (r["stop_at"] is None or r["stop_at"] >= 0):
                self.fail(f"_wk_wf_saga row {r}")
        for r in doc.get("pause", []):
            if r["id"] != 1 or r["paused_from"] not in STATES or inst["state"] != "paused":
                self.fail(f"_wk_wf_pause row {r} in state {inst['state']}")
        for p in doc.get("parent", []):
            if p["id"] != 1 or p["notice"] not in (0, 1, 2) or p["detached"] not in (0, 1):
                self.fail(f"_wk_wf_parent row {p}")

    def attempts(self, rows: list[dict[str, Any]], steps: list[dict[str, Any]],
                 branches: list[dict[str, Any]]) -> None:
        there = {(s["pos"], -1) for s in steps} | {(b["pos"], b["idx"]) for b in branches}
        for a in rows:
            what = f"attempt {a['attempt']} of ({a['pos']}, {a['idx']})"
            if (a["pos"], a["idx"]) not in there or a["attempt"] < 1:
                self.fail(f"{what}: no such step or branch")
            # A cut attempt has no end, nor has one the host cut at its timeout.
            ended = a["ended_at"] is not None
            if a["outcome"] not in OUTCOMES or (ended and a["outcome"] == "cut") or (
                    not ended and a["outcome"] not in ("cut", "timed-out")):
                self.fail(f"{what}: outcome {a['outcome']!r}, ended_at {a['ended_at']}")

    def instance(self, w: dict[str, Any]) -> None:
        if w["id"] != 1 or w["state"] not in STATES or not RUN_ID.fullmatch(w["run_id"]):
            self.fail(f"_wk_wf row id/state/run_id {w['id']}, {w['state']}, {w['run_id']}")
        self.value("input", w["input"], bool(w["input_tagged"]))
        if w["output"] is not None:
            self.value("output", w["output"], bool(w["output_tagged"]))
        if (w["state"] in ("completed", "failed", "cancelled", "terminated")) != (
                w["finished_at"] is not None):
            self.fail(f"finished_at {w['finished_at']} in state {w['state']}")

    def journal(self, steps: list[dict[str, Any]], run_id: str,
                emitted: dict[int, dict[str, Any]]) -> None:
        if [s["pos"] for s in steps] != list(range(len(steps))):
            self.fail(f"positions {[s['pos'] for s in steps]} are not 0..n-1")
        for i, s in enumerate(steps):
            final = self.kinds.get(s["kind"])
            if final is None:
                self.fail(f"position {s['pos']}: unknown kind {s['kind']!r}")
                continue
            if not final and i != len(steps) - 1:
                self.fail(f"position {s['pos']}: pending kind {s['kind']} before the end")
            self.name(f"position {s['pos']}", s["name"])
            self.entry(f"position {s['pos']}", s)
            if s["kind"] == "M":
                e = emitted.get(s["event_seq"])
                if emitted and (e is None or (e["name"], e["run_id"], e["pos"]) != (
                        s["name"], run_id, s["pos"])):
                    self.fail(f"position {s['pos']}: M entry without its stream row")

    def entry(self, what: str, s: dict[str, Any]) -> None:
        """One row of _wk_wf_step or _wk_wf_branch, per its kind (the page's kinds)."""
        kind, result = s["kind"], s["result"]
        if kind in "pwqg":
            if result is not None:
                self.fail(f"{what}: pending {kind} with a result")
            need = {"p": "next_attempt_at", "w": "wake_at", "q": "wake_at"}.get(kind)
            if kind == "q" and s.get("idx") is not None and s["name"].startswith("child "):
                need = None  # a child branch's wait has no deadline
            if need and s[need] is None:
                self.fail(f"{what}: {kind} without {need}")
            return
        if result is None:
            self.fail(f"{what}: final {kind} without a result")
            return
        if kind in "STEF":
            self.value(what, result, kind in TAGGED_KINDS)
        elif kind == "X":
            self.failure(what, result, s["error"])
        elif kind in "ZOM":
            if result != "null" or (kind != "M" and s["wake_at"] is None):
                self.fail(f"{what}: {kind} with result {result!r}, wake_at {s['wake_at']}")
            if kind == "M" and s["event_seq"] is None:
                self.fail(f"{what}: M without event_seq")
        elif kind in "NRUV":
            self.helper(what, s)
        elif kind == "G":
            self.group(what, result)
        if kind in "EF" and (s["event_seq"] is None or s["wake_at"] is None):
            self.fail(f"{what}: {kind} without event_seq and wake_at")

    def failure(self, what: str, result: str, error: Any) -> None:
        got = self.value(what, result, False)
        if not (isinstance(got, list) and len(got) == 2 and isinstance(got[0], str)
                and type(got[1]) is int and got[0] == error):
            self.fail(f"{what}: X result {result!r} is not [error, attempts] of its error")

    def helper(self, what: str, s: dict[str, Any]) -> None:
        v = self.value(what, s["result"], False)
        ok = {"N": s["name"] == "now" and type(v) is int and v == s["updated_at"],
              "R": s["name"] == "random" and type(v) is float and 0 <= v < 1,
              "U": s["name"] == "uuid" and isinstance(v, str) and bool(UUID4.fullmatch(v)),
              "V": v is True}[s["kind"]]
        if not ok:
            self.fail(f"{what}: {s['kind']} named {s['name']!r} holds {s['result']!r}")

    def group(self, what: str, result: str) -> None:
        """A G entry: no flag of its own; each outcome is checked as its kind says."""
        try:
            got = parse(result)
        except ValueError as e:
            self.fail(f"{what}: {e}")
            return
        if dumps(got) != result:
            self.fail(f"{what}: {result[:80]!r} does not encode back to itself")
        if not (isinstance(got, list) and len(got) == 2 and isinstance(got[1], list)):
            self.fail(f"{what}: G result {result!r} is not [decider, outcomes]")
            return
        decider, outcomes = got
        if decider is not None and not (type(decider) is int and 0 <= decider < len(outcomes)):
            self.fail(f"{what}: decider {decider!r}")
        for i, out in enumerate(outcomes):
            if out is None:
                continue
            if not (isinstance(out, list) and len(out) == 2 and out[0] in BRANCH_FINAL):
                self.fail(f"{what}: outcome {i} {out!r}")
                continue
            sub = {"kind": out[0], "name": "x", "result": dumps(out[1]), "error": None,
                   "wake_at": 0, "event_seq": 0}
            if out[0] == "X":
                sub["error"] = out[1][0] if isinstance(out[1], list) and out[1] else None
            self.entry(f"{what} outcome {i}", sub)

    def emitted(self, rows: list[dict[str, Any]]) -> None:
        if [r["seq"] for r in rows] != list(range(len(rows))):
            self.fail(f"stream offsets {[r['seq'] for r in rows]} are not 0..n-1")
        for r in rows:
            self.name(f"emit {r['seq']}", r["name"])
            self.value(f"emit {r['seq']}", r["payload"], bool(r["tagged"]))

    def branches(self, rows: list[dict[str, Any]], kinds: dict[int, str]) -> None:
        for b in rows:
            what = f"branch ({b['pos']}, {b['idx']})"
            if kinds.get(b["pos"]) not in ("G", "g"):
                self.fail(f"{what}: not at a group's position")
            if b["kind"] not in BRANCH_FINAL | set("pwq"):
                self.fail(f"{what}: kind {b['kind']!r}")
                continue
            self.name(what, b["name"])
            self.entry(what, b)


def histories() -> Iterator[tuple[str, dict[str, Any]]]:
    """(file: name, document) of every history in golden/, children included."""
    for path in sorted(GOLDEN.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        found = doc["histories"].items() if "histories" in doc else [("", doc)]
        for name, h in found:
            yield f"{path.name}:{name}", h
            if "child" in h:
                yield f"{path.name}:{name}/child", h["child"]


GOLDENS = dict(histories())


# -- the tests -----------------------------------------------------------------------------

def test_the_page_documents_every_table_and_kind() -> None:
    tables = documented_tables()
    assert set(tables) == {"_wk_wf", "_wk_wf_step", "_wk_wf_event", "_wk_wf_emit",
                           "_wk_wf_run", "_wk_wf_branch", "_wk_wf_attempt", "_wk_wf_parent",
                           "_wk_wf_child", "_wk_wf_saga", "_wk_wf_pause",
                           "_wk_wf_attempt_traceback", "_wk_wf_trace", "_wk_wf_labels",
                           "_wk_wf_attempt_earlier", "_wk_wf_test"}
    assert [c for c, _, _ in tables["_wk_wf_step"]] == [
        "pos", "kind", "name", "result", "attempts", "error", "next_attempt_at", "wake_at",
        "event_seq", "updated_at"]
    assert [c for c, _, _ in tables["_wk_wf_attempt"]] == [
        "pos", "idx", "attempt", "started_at", "ended_at", "outcome", "error", "fuel",
        "memory_grown"]
    assert [c for c, _, _ in tables["_wk_wf_attempt_traceback"]] == [
        "pos", "idx", "attempt", "traceback"]
    assert [c for c, _, _ in tables["_wk_wf_attempt_earlier"]] == [
        "seq", "run_id", "move", "moved_at", "pos", "name", "idx", "branch", "attempt",
        "started_at", "ended_at", "outcome", "error", "fuel", "memory_grown", "traceback"]
    kinds = documented_kinds()
    assert "".join(k for k, f in kinds.items() if f) == "STXZEFONRUVMG"
    assert "".join(k for k, f in kinds.items() if not f) == "pwqg"


def test_the_page_names_every_golden_file() -> None:
    text = doc_text()
    missing = [p.name for p in GOLDEN.glob("*.json") if p.name not in text]
    assert missing == []


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden_history_follows_the_written_format(name: str) -> None:
    c = Checker(name)
    c.history(GOLDENS[name])
    assert c.problems == []


def test_the_goldens_cover_every_kind() -> None:
    seen = {s["kind"] for h in GOLDENS.values() for s in h["steps"]}
    seen |= {b["kind"] for h in GOLDENS.values() for b in h.get("branches", [])}
    assert seen == set(documented_kinds())


# The page's examples of the value encoding, each (value, stored text, tagged).
EXAMPLES: list[tuple[Any, str, bool]] = [
    ({"item": "book", "qty": 2}, '{"item":"book","qty":2}', False),
    (b"\x00\x01%PDF", '"\\u0000bAAElUERG"', True),
    ("\x00 starts with NUL", '"\\u0000s\\u0000 starts with NUL"', True),
    ([2**64 - 1, -(2**64), 0.1, math.inf, math.nan, "é☃"],
     '[18446744073709551615,-18446744073709551616,0.1,Infinity,NaN,"é☃"]', False),
    ({"b": [b"x", "ok"]}, '{"b":["\\u0000beA==","ok"]}', True),
    ({"\x00k": 1}, '{"\\u0000k":1}', False),
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("value", "text", "tagged"), EXAMPLES)
def test_the_pages_encoding_examples(value: Any, text: str, tagged: bool) -> None:
    assert encode(value) == (text, tagged)
    assert _same(decode(text, tagged), value)
    assert f"`{text}`" in doc_text()


@pytest.mark.parametrize(("text", "tagged", "why"), [
    ('"\\u0000xAA"', True, "unknown tag"),
    ('"\\u0000bAA"', False, "for a value with tags"),  # a tag, stored as untagged
    ('"plain"', True, "without tags"),
    ("18446744073709551616", False, "out of range"),
    ('"\\u0000b!!"', True, "base64"),  # not base64
])
def test_the_decoder_refuses_what_the_page_forbids(text: str, tagged: bool, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        decode(text, tagged)


def test_the_checker_finds_a_history_that_breaks_the_format() -> None:
    """The checks can fail: a golden history altered in the ways the page forbids."""
    doc = json.loads(json.dumps(GOLDENS["history_v1.json:completes"]))
    steps = doc["steps"]
    steps[0]["kind"] = "K"  # an unknown kind
    steps[1]["kind"] = "S"  # a tagged value under an untagged kind
    steps[4]["result"] = '["ValueError: the ledger is closed", 2]'  # not the compact text
    steps[5], steps[11] = steps[11], steps[5]  # a pending entry before the end
    doc["instance"]["extra"] = 1  # a column the page does not have
    c = Checker("altered")
    c.history(doc)
    found = "\n".join(c.problems)
    for expected in ("unknown kind 'K'", "position 1: tagged flag False",
                     "does not encode back", "pending kind q before the end",
                     "_wk_wf columns"):
        assert expected in found, found


# -- a data directory written by commit 9401b45 (tests/e2e/data/wf_9401b45) ----------------

FIXTURE = REPO / "tests" / "e2e" / "data" / "wf_9401b45" / "data.tar.gz"


def _normal(sql: str) -> str:
    """A CREATE statement as sqlite_master keeps it, but for line breaks and indentation."""
    return " ".join(sql.replace("IF NOT EXISTS ", "").split())


def _databases(root: Path) -> dict[Path, sqlite3.Connection]:
    dbs = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.read_bytes()[:16] == b"SQLite format 3\x00":
            conn = sqlite3.connect(path)
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_wk_wf'").fetchone():
                dbs[path] = conn
            else:
                conn.close()
    return dbs


def _rows(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
        return []
    cur = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2" if table in (
        "_wk_wf_branch",) else f"SELECT * FROM {table} ORDER BY 1")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


@pytest.fixture(scope="module")
def fixture_dbs(tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[dict[Path, sqlite3.Connection]]:
    root = tmp_path_factory.mktemp("wf_9401b45")
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, filter="data")
    dbs = _databases(root)
    yield dbs
    for conn in dbs.values():
        conn.close()


# What a version after 9401b45's (6) added: not in its databases.
_LATER = ("_wk_wf_attempt_traceback", "_wk_wf_trace", "_wk_wf_labels",  # versions 7 to 9
          "_wk_wf_attempt_earlier", "_wk_wf_test")  # versions 10 and 11


def test_the_pages_ddl_is_what_9401b45_stored(
        fixture_dbs: dict[Path, sqlite3.Connection]) -> None:
    documented = {_normal(s) for s in ddl_statements()
                  if not any(name in s for name in _LATER)}
    stored = {_normal(sql) for conn in fixture_dbs.values() for (sql,) in conn.execute(
        r"SELECT sql FROM sqlite_master WHERE name LIKE '\_wk\_wf%' ESCAPE '\'")}
    assert len(fixture_dbs) >= 10
    assert stored == documented


def test_the_databases_9401b45_wrote_follow_the_written_format(
        fixture_dbs: dict[Path, sqlite3.Connection]) -> None:
    problems = []
    for path, conn in fixture_dbs.items():
        doc: dict[str, Any] = {"format": "wk-workflow-history/1"}
        for key, table in {**CORE, **EXTRA}.items():
            doc[key] = _rows(conn, table)
        doc["instance"] = doc["instance"][0]
        c = Checker(path.name)
        c.history(doc)
        problems += c.problems
    assert problems == []


def test_the_pages_ddl_of_version_7_is_what_the_runner_makes() -> None:
    from wkguest.workflow.core import tracebacks

    made = {_normal(sql.replace("IF NOT EXISTS ", "")) for sql, _ in
            tracebacks.writes(0, -1, 1, "tb")[:2]}
    documented = {_normal(s) for s in ddl_statements() if _LATER[0] in s}
    assert made == documented


def test_the_pages_ddl_of_version_9_is_what_the_runner_makes() -> None:
    from wkguest.workflow.core import labels

    made = {_normal(sql.replace("IF NOT EXISTS ", "")) for sql, _ in
            labels.writes({"k": "v"})[:1]}
    documented = {_normal(s) for s in ddl_statements() if _LATER[2] in s}
    assert made == documented


def test_the_pages_ddl_of_version_11_is_what_the_test_route_makes() -> None:
    from wkguest.workflow.core import mocks

    made = {_normal(mocks.MAKE.removeprefix("/*wk:test-table*/ ").replace(
        "IF NOT EXISTS ", ""))}
    documented = {_normal(s) for s in ddl_statements() if _LATER[4] in s}
    assert made == documented


def test_the_pages_ddl_of_version_10_is_what_the_runner_makes() -> None:
    from wkguest.workflow.core import earlier_attempts

    kept = earlier_attempts.keep(0, "restart", 0, {"_wk_wf_attempt"})
    made = {_normal(sql) for sql, _ in kept[:1]}
    documented = {_normal(s) for s in ddl_statements() if _LATER[3] in s}
    assert made == documented
