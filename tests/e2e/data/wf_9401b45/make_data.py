"""Remake this fixture: a data directory of `wkhost serve` holding one instance of each case
of app.py, stopped mid-flight, written by the host and runner of the checkout REPO.

    git worktree add /tmp/s-wt 9401b45
    (cd /tmp/s-wt && python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]')
    /tmp/s-wt/.venv/bin/python tests/e2e/data/wf_9401b45/make_data.py /tmp/s-wt
    git worktree remove /tmp/s-wt

It builds app.py with REPO's SDK, serves it as the class `stored` from REPO (a fake
clock, a data directory in a temporary directory), starts the instances and brings each
to the point INSTANCES names, checks that they are all at rest (two snapshots a second
apart are equal), stops the server with SIGTERM, and writes beside this script:

    data.tar.gz     the data directory, as `data/...`
    snapshot.json   what REPO's runner reported of each instance once at rest: its
                    status, its steps (with attempts and values) and its emitted events

Only the standard library and cbor2 (a dev dependency), so that it runs in any checkout.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cbor2

HERE = Path(__file__).resolve().parent
CLS = "stored"
TIMEOUT = 60.0  # real seconds for any one state to be reached
Status = dict[str, Any]

# id -> input. "kid" ids are the children their parents start.
INSTANCES: dict[str, Any] = {
    "chain": {"case": "chain"},
    "steps": {"case": "steps", "item": "book"},
    "retry": {"case": "retry"},
    "cut": {"case": "cut"},
    "wait": {"case": "wait"},
    "group": {"case": "group", "kid": "group-kid"},
    "parent": {"case": "parent", "kid": "parent-kid"},
    "saga": {"case": "saga", "entries": [["a", 1], ["b", 2], ["c", 3]], "flaky": ["b"]},
    "saga-cancel": {"case": "saga", "entries": [["x", 10], ["y", 20]], "flaky": ["y"],
                    "wait": True},
    "emit": {"case": "emit", "item": "book"},
    "pause": {"case": "pause"},
}
KIDS = ("group-kid", "parent-kid")


class Host:
    """`wkhost serve` of REPO on 127.0.0.1, and the wk-workflow/v1 routes as the operator."""

    def __init__(self, repo: Path, data: Path, wasm: Path, compiled: Path) -> None:
        cmd = [str(repo / ".venv" / "bin" / "python"), "-m", "wkhost.cli", "serve",
               "--port", "0", "--data", str(data), "--cache-dir", str(compiled),
               "--fake-clock", "--actor", f"{CLS}={wasm}", "--access", f"{CLS}=internal"]
        self.data = data
        self.log: list[str] = []
        self.proc = subprocess.Popen(cmd, cwd=repo, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._drain, daemon=True).start()
        assert self.proc.stdout is not None
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("wkhost serve exited early:\n" + "\n".join(self.log[-30:]))
            if "listening on " in line:
                self.url = line.strip().split("listening on ", 1)[1]
                self.token = (data / "_host" / "admin-token").read_text().strip()
                return
        sys.exit("wkhost serve did not start in time")

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))

    def stop(self) -> None:
        self.proc.terminate()
        if self.proc.wait(60) != 0:
            sys.exit("wkhost serve did not stop cleanly:\n" + "\n".join(self.log[-30:]))

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        req = urllib.request.Request(self.url + path, data=body, method="POST")
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", "application/cbor")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def wk(self, id: str, route: str, msg: dict[str, Any] | None = None) -> Any:
        path = f"/{CLS}/{quote(id, safe='')}/wk-workflow/v1/{route}"
        code, data = self.post(path, cbor2.dumps(msg or {}))
        if code != 200:
            sys.exit(f"{route} of {id}: {code} {data[:500]!r}")
        return cbor2.loads(data)

    def advance(self, ms: int) -> None:
        code, data = self.post(f"/_wk/clock/advance?ms={ms}&settle_ms=20000", b"")
        if code != 200:
            sys.exit(f"clock advance: {code} {data!r}")

    def until(self, id: str, what: str, pred: Callable[[Status, list[Any]], bool]) -> None:
        end = time.monotonic() + TIMEOUT
        while True:
            status = self.wk(id, "status")
            steps = self.wk(id, "steps", {"attempts": True})["steps"]
            if pred(status, steps):
                return
            if time.monotonic() > end:
                sys.exit(f"{id}: not {what} after {TIMEOUT} s: {status}\n{steps}\n"
                         + "\n".join(self.log[-30:]))
            time.sleep(0.05)


def last(steps: list[Any], name: str, state: str, errored: bool = False) -> bool:
    """Whether the last position is `name` in `state` (and, `errored`: with an error:
    its attempt has ended, not just been counted)."""
    return bool(steps) and steps[-1]["name"] == name and steps[-1]["state"] == state and (
        not errored or steps[-1]["error"] is not None)


def waits_for(name: str) -> Callable[[Status, list[Any]], bool]:
    return lambda s, _: s["state"] == "waiting" and s["waiting_for"] == [name]


def drive(h: Host) -> None:
    """Bring every instance to where it stops (the module's doc; app.py's cases)."""
    h.wk("chain", "start", {"input": INSTANCES["chain"]})
    h.until("chain", "resting in run 1", lambda s, st: last(st, "rest", "sleeping"))
    h.advance(1000)  # the only move of the clock: before any other instance exists
    h.until("chain", "resting in run 2",
            lambda s, st: s.get("runs") == 2 and last(st, "rest", "sleeping"))
    for id, inp in INSTANCES.items():
        if id != "chain":
            h.wk(id, "start", {"input": inp})
    h.until("steps", "asleep", lambda s, st: last(st, "nap", "sleeping"))
    h.until("retry", "in backoff", lambda s, st: last(st, "flaky", "retrying", True))
    h.until("cut", "cut", lambda s, st: last(st, "fragile", "retrying")
            and any(f"{CLS}/cut: its" in line and " trapped" in line for line in h.log))
    h.until("wait", "waiting for note", waits_for("note"))
    h.wk("wait", "event", {"name": "note", "payload": b"\x00note"})
    h.until("wait", "waiting for approve", waits_for("approve"))
    h.wk("wait", "event", {"name": "later", "payload": {"x": 1}})
    h.until("wait", "keeping later", lambda s, _: s["events_pending"] == 1)
    for kid in KIDS:
        h.until(kid, "waiting for release", waits_for("release"))
    h.until("group", "in its open group", lambda s, st: last(st, _GROUP, "open") and any(
        a["branch"] == 1 and a["outcome"] == "failed" for a in st[-1]["history"]))
    h.until("parent", "waiting for its child", waits_for(f"child {CLS}/parent-kid"))
    h.until("saga", "compensating", lambda s, st: s["state"] == "compensating"
            and last(st, "compensate:book b", "retrying", True))
    h.until("saga-cancel", "waiting for go", waits_for("go"))
    h.wk("saga-cancel", "cancel", {"compensate": True})
    h.until("saga-cancel", "compensating", lambda s, st: s["state"] == "compensating"
            and last(st, "compensate:book y", "retrying", True))
    h.until("emit", "waiting for ship", waits_for("ship"))
    h.until("pause", "asleep", lambda s, st: last(st, "nap", "sleeping"))
    h.wk("pause", "pause")
    h.until("pause", "paused", lambda s, _: s["state"] == "paused")


_GROUP = "all_settled(ok,flaky,bad,go,nap,child stored/group-kid)"


def snapshot(h: Host) -> dict[str, Any]:
    out = {}
    for id in [*INSTANCES, *KIDS]:
        out[id] = {"status": h.wk(id, "status"),
                   "steps": h.wk(id, "steps", {"attempts": True, "values": True,
                                               "value_bytes": 4096})["steps"],
                   "events": h.wk(id, "events")["events"]}
    return out


def jsonable(v: Any) -> Any:
    """`v` as JSON can hold it: bytes as {"base64": ...}, floats that JSON lacks as text."""
    if isinstance(v, bytes):
        return {"base64": base64.b64encode(v).decode("ascii")}
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return {"float": repr(v)}
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, help="a checkout with its venv in REPO/.venv")
    ap.add_argument("--out", type=Path, default=HERE, help="where to write (default: here)")
    args = ap.parse_args()
    repo = args.repo.resolve()
    python = str(repo / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="wk-stored-") as tmp:
        work = Path(tmp)
        wasm = work / "stored.wasm"
        subprocess.run([python, "-m", "wkhost.cli", "build", str(HERE / "app.py"), "-o",
                        str(wasm), "--no-cache"], cwd=repo, check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                                capture_output=True, text=True).stdout.strip()
        h = Host(repo, work / "data", wasm, work / "compiled")
        try:
            drive(h)
            first = snapshot(h)
            time.sleep(1.0)
            again = snapshot(h)
        finally:
            h.stop()
        if first != again:
            sys.exit("the instances were not at rest: two snapshots a second apart differ")
        with tarfile.open(args.out / "data.tar.gz", "w:gz") as tar:
            tar.add(work / "data", arcname="data")
        doc = {"commit": commit, "class": CLS, "inputs": INSTANCES, "instances": first}
        (args.out / "snapshot.json").write_text(
            json.dumps(jsonable(doc), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'data.tar.gz'} and snapshot.json from {commit}")


if __name__ == "__main__":
    main()
