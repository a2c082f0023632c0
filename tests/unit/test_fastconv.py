"""host/engine/fastconv.py: with the patch, wasmtime-py converts component values exactly
as without.

Every comparison runs the same calls twice, stock (patch uninstalled, WKHOST_FASTCONV=0)
and patched, each with a Linker built in that mode (the host-function callback is chosen
when a function is added), and compares the outcomes in a canonical form that keeps the
Python types (bytes vs list, tuple vs list, Record vs Variant, int vs bool, float bits).

Two real components: `fctest` (its own WIT world below, built here with componentize-py
into .cache/fastconv-test) covers every value kind wasmtime-py converts, through exported
functions and through host functions the guest calls; an echo actor of the wkhost world
(built with the shared `build_guest` fixture) covers the real Host with request/sender/
response and typed sqlite rows.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, Variant
from wasmtime.component import _func as wt_func
from wasmtime.component import _linker as wt_linker
from wasmtime.component import _types as wt_types
from wkhost.engine import fastconv

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "fastconv-test"

FCTEST_WIT = """\
package wk:fctest@0.1.0;

interface types {
  record point { x: s32, y: s32, label: string }
  /// Tagged in wasmtime-py: `named` and `other` both carry a str.
  variant shape { empty, circle(f64), rect(point), named(string), other(string) }
  /// Untagged: int, float, str, None.
  variant num { int(s64), real(f64), text(string), nothing }
  /// Tagged (`text` and `blob` both carry a str), all payloads scalar: the shape of
  /// wkhost's sqlite `value`, which fastconv lifts in bulk.
  variant sqlv { null, integer(s64), real(f64), text(string), blob(string) }
  /// Untagged too, and order matters: `maybe` accepts any object (its none case), so
  /// wasmtime-py tries it first for every value and fails to lower an int.
  variant odd { maybe(option<string>), count(s64) }
  enum color { red, green, blue }
  flags perms { read, write, exec }
  record everything {
    name: string,
    data: list<u8>,
    nums: list<s64>,
    pairs: list<tuple<string, u32>>,
    /// Read by fastconv in bulk, as headers and a log record's fields are.
    headers: list<tuple<string, string>>,
    maybe: option<u64>,
    maybe-maybe: option<option<string>>,
    res-point: result<point, string>,
    res-str: result<string, string>,
    res-unit: result<_, string>,
    shapes: list<shape>,
    values: list<num>,
    sqls: list<sqlv>,
    odd: list<odd>,
    color: color,
    perms: perms,
    ch: char,
    flag: bool,
    small: s8,
    f: f32,
  }
}

interface host {
  use types.{everything, num};
  echo: func(v: everything) -> everything;
  echo-bytes: func(b: list<u8>) -> list<u8>;
  rows: func(n: u32) -> list<list<num>>;
  tick: func();
}

interface guest {
  use types.{everything, num};
  echo: func(v: everything) -> everything;
  via-host: func(v: everything) -> everything;
  bytes-via-host: func(b: list<u8>) -> list<u8>;
  rows-via-host: func(n: u32) -> list<list<num>>;
  tick-via-host: func();
  pair: func(a: string, b: tuple<s32, string>) -> tuple<s32, string>;
}

world fctest {
  import host;
  export guest;
}
"""

FCTEST_APP = """\
from wit_world import exports
from wit_world.imports import host


class Guest(exports.Guest):
    def echo(self, v):
        return v

    def via_host(self, v):
        return host.echo(v)

    def bytes_via_host(self, b):
        return host.echo_bytes(b)

    def rows_via_host(self, n):
        return host.rows(n)

    def tick_via_host(self):
        host.tick()

    def pair(self, a, b):
        return (b[0] + len(a), a + b[1])
"""

# An actor of the wkhost world that reflects what it received and runs typed sqlite calls.
ECHO_ACTOR = """\
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import sqlite, types
from wit_world.imports.sqlite import Value_Blob, Value_Integer, Value_Null, Value_Real, Value_Text


class Handler(exports.Handler):
    def on_init(self):
        sqlite.exec("CREATE TABLE t (a, b, c, d, e)", [])

    def on_alarm(self):
        return None

    def handle(self, req, sender):
        out = [req.method, req.path, req.query, req.headers, req.body, repr(sender)]
        if req.path == "/sql":
            params = [Value_Integer(-5), Value_Real(2.5), Value_Text("é\\x00"),
                      Value_Blob("\\x00\\xff"), Value_Null()]
            ins = sqlite.exec("INSERT INTO t VALUES (?, ?, ?, ?, ?)", params)
            rows = sqlite.exec("SELECT a, b, c, d, e, 7, 'x' FROM t", [])
            packed = sqlite.query_packed("SELECT a, c FROM t", [])
            try:
                sqlite.exec("SELECT nope FROM nowhere", [])
            except Err as e:
                err = e.value
            out += [ins.changes, ins.last_insert_rowid, rows.columns, rows.rows, packed, err]
        return types.Response(status=201, headers=[("x-echo", repr(out))], body=req.body)
"""


# ------------------------------------------------------------------------ canonical values
def canon(v: Any) -> Any:
    """A comparable form that keeps the exact Python types wasmtime-py produced."""
    if isinstance(v, Record):
        return ("Record", tuple(sorted((k, canon(x)) for k, x in vars(v).items())))
    if isinstance(v, Variant):
        return ("Variant", v.tag, canon(v.payload))
    if isinstance(v, list | tuple):
        return (type(v).__name__, tuple(canon(x) for x in v))
    if isinstance(v, set):
        return ("set", tuple(sorted(v)))
    if isinstance(v, float):
        return ("float", v.hex())
    return (type(v).__name__, v)


def outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", canon(fn()))
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


def record(**fields: Any) -> Record:
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def point(x: int, y: int, label: str) -> Record:
    return record(x=x, y=y, label=label)


def everything(**over: Any) -> Record:
    fields: dict[str, Any] = dict(
        name="héllo ✓ \x00 end", data=bytes(range(256)), nums=[0, -1, 2**63 - 1, -(2**63)],
        pairs=[("a", 1), ("", 2**32 - 1)],
        headers=[("content-type", "text/plain"), ("", ""), ("x-é\x00", "✓ \x00 v")],
        maybe=None, maybe_maybe=Variant("none"),
        res_point=point(1, -2, "p"), res_str=Variant("ok", "fine"), res_unit=None,
        shapes=[Variant("empty"), Variant("circle", 1.5), Variant("rect", point(3, 4, "r")),
                Variant("named", "n"), Variant("other", "o")],
        values=[7, 2.25, "text", None, -3],
        sqls=[Variant("integer", -(2**63)), Variant("real", -0.0), Variant("text", "é\x00✓"),
              Variant("blob", "\x00\xff"), Variant("null"), Variant("text", "")],
        odd=["s", None], color="green",
        perms={"read", "exec"}, ch="✓", flag=True, small=-128, f=1.5,
    )
    fields.update(over)
    return record(**fields)


SAMPLES = {
    "base": everything(),
    "empties": everything(name="", data=b"", nums=[], pairs=[], headers=[], shapes=[],
                          values=[], sqls=[], odd=[], perms=set(), flag=False, f=0.0),
    "some": everything(maybe=0, maybe_maybe=Variant("some", None), res_point="bad point",
                       res_str=Variant("err", "nope"), res_unit="unit err", color="blue"),
    "some2": everything(maybe=2**64 - 1, maybe_maybe=Variant("some", "inner"),
                        res_point=point(-(2**31), 2**31 - 1, ""), res_str=Variant("ok", ""),
                        res_unit="", values=[None, None, "", 0.0, math.inf],
                        sqls=[Variant("real", math.nan), Variant("integer", 2**63 - 1)]),
    "big": everything(name="x" * 100_000, data=b"\xff" * 5000, nums=list(range(-500, 500)),
                      headers=[(f"k{i}", "v" * i) for i in range(300)] + [("h", "é" * 50_000)],
                      values=[i if i % 2 else str(i) for i in range(300)],
                      sqls=[Variant("text", "é" * i) if i % 3 else Variant("integer", -i)
                            for i in range(300)]),
}

# Values that fail to convert: the same exception, with the same message, either way.
BAD = {
    "list-for-bytes": everything(data=[1, 2]),
    "bytearray-for-bytes": everything(data=bytearray(b"x")),
    "str-in-s64-list": everything(nums=["1"]),
    "int-in-headers": everything(headers=[("a", 1)]),
    "triple-in-headers": everything(headers=[("a", "b", "c")]),
    "unknown-tag": everything(shapes=[Variant("bogus", 1)]),
    "unknown-sqlv-tag": everything(sqls=[Variant("bogus", 1)]),
    "str-for-sqlv-integer": everything(sqls=[Variant("integer", "1")]),
    "untagged-for-tagged": everything(shapes=["named"]),
    "no-num-case": everything(values=[[1]]),
    "int-for-odd": everything(odd=[5]),
    "untagged-option-option": everything(maybe_maybe="x"),
    "untagged-result-string": everything(res_str="x"),
    "record-for-result": everything(res_unit=point(1, 2, "x")),
    "wrong-tuple-length": everything(pairs=[("a", 1, 2)]),
    "list-for-tuple": everything(pairs=[["a", 1]]),
    "missing-field": record(name="only a name"),
    "int-for-float": everything(f=1),
    "long-char": everything(ch="ab"),
    "set-of-ints-for-flags": everything(perms={1}),
}


# ------------------------------------------------------------------------------- modes
@pytest.fixture(autouse=True)
def _restore_mode() -> Iterator[None]:
    was = fastconv.installed()
    env = os.environ.get("WKHOST_FASTCONV")
    yield
    if env is None:
        os.environ.pop("WKHOST_FASTCONV", None)
    else:
        os.environ["WKHOST_FASTCONV"] = env
    if was:
        fastconv.install()
    else:
        fastconv.uninstall()


def set_mode(patched: bool) -> None:
    if patched:
        os.environ.pop("WKHOST_FASTCONV", None)
        assert fastconv.install()
    else:
        fastconv.uninstall()
        os.environ["WKHOST_FASTCONV"] = "0"  # in case something calls install() meanwhile


def both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    """fn() run stock, then patched (fn builds its own Linker/Store in the current mode)."""
    set_mode(False)
    stock = fn()
    set_mode(True)
    return stock, fn()


# ------------------------------------------------------------------------------ fctest
@pytest.fixture(scope="session")
def fctest() -> tuple[Engine, Component]:
    """The fctest component, built once per input and compiled once per wasmtime version."""
    from wkhost.engine.componentize import componentize_command, componentize_version

    key = hashlib.sha256(f"{FCTEST_WIT}\0{FCTEST_APP}\0{componentize_version()}".encode())
    wasm = CACHE / f"fctest-{key.hexdigest()[:24]}.wasm"
    if not wasm.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            (Path(tmp) / "wit").mkdir()
            (Path(tmp) / "wit" / "world.wit").write_text(FCTEST_WIT)
            (Path(tmp) / "app").mkdir()
            (Path(tmp) / "app" / "app.py").write_text(FCTEST_APP)
            out = Path(tmp) / "out.wasm"
            proc = subprocess.run(
                [*componentize_command(), "-d", "wit", "-w", "fctest", "componentize", "app",
                 "-p", "app", "-o", str(out)],
                cwd=tmp, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                pytest.fail(f"componentize-py failed:\n{proc.stdout}\n{proc.stderr}")
            os.replace(out, wasm)
    engine = Engine(Config())
    compiled = wasm.with_suffix(f".wasmtime{fastconv.wasmtime_version()}.cwasm")
    if not compiled.is_file():
        component = Component.from_file(engine, str(wasm))
        tmp_path = compiled.with_suffix(f".tmp{os.getpid()}")
        tmp_path.write_bytes(component.serialize())
        os.replace(tmp_path, compiled)
    return engine, Component.deserialize_file(engine, str(compiled))


def host_rows(n: int) -> list[list[Any]]:
    return [[i, i * 0.5, f"row {i}", None] for i in range(n)]


class Fctest:
    """One instance of fctest, in its own Store, with a Linker built in the current mode."""

    def __init__(self, engine: Engine, component: Component, echo_result: Any = None,
                 pin: bool = False) -> None:
        self.seen: list[Any] = []
        linker = Linker(engine)
        linker.add_wasip2()

        def echo(_store: Any, v: Any) -> Any:
            self.seen.append(canon(v))
            return v if echo_result is None else echo_result

        def echo_bytes(_store: Any, b: Any) -> Any:
            self.seen.append(canon(b))
            return b

        def rows(_store: Any, n: int) -> Any:
            self.seen.append(canon(n))
            return host_rows(n)

        def tick(_store: Any) -> None:
            self.seen.append("tick")

        def same(_store: Any, v: Any) -> Any:  # one object added as two imports
            self.seen.append(canon(v))
            return v

        funcs = {"echo": echo, "echo-bytes": echo_bytes, "rows": rows, "tick": tick}
        if pin:
            funcs = {name: fastconv.pin_signature(f) for name, f in funcs.items()}
            if echo_result is None:  # two imports of one type each, both one pinned function
                funcs["echo"] = funcs["echo-bytes"] = fastconv.pin_signature(same)
        with linker.root() as root, root.add_instance("wk:fctest/host@0.1.0") as inst:
            for name, f in funcs.items():
                inst.add_func(name, f)
        self.store = Store(engine)
        self.store.set_wasi(WasiConfig())
        instance = linker.instantiate(self.store, component)
        guest = component.get_export_index("wk:fctest/guest@0.1.0")
        names = ("echo", "via-host", "bytes-via-host", "rows-via-host", "tick-via-host", "pair")
        self.funcs = {}
        for name in names:
            index = component.get_export_index(name, guest)
            assert index is not None
            func = instance.get_func(self.store, index)
            assert func is not None
            self.funcs[name] = func

    def call(self, name: str, *args: Any) -> Any:
        return self.funcs[name](self.store, *args)


@pytest.mark.e2e
@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize("export", ["echo", "via-host"])
def test_values_round_trip_the_same(fctest: tuple[Engine, Component], sample: str,
                                    export: str) -> None:
    value = SAMPLES[sample]

    def run() -> Any:
        t = Fctest(*fctest)
        # twice on one instance: the second call uses the cached signatures
        return [outcome(lambda: t.call(export, value)) for _ in range(2)], t.seen

    (stock, stock_seen), (patched, patched_seen) = both(run)
    assert patched == stock
    assert patched_seen == stock_seen
    assert stock[0] == ("ok", canon(value))  # and both are what went in
    assert stock_seen == ([canon(value)] * 2 if export == "via-host" else [])


@pytest.mark.e2e
@pytest.mark.parametrize("data", [b"", b"\x00", bytes(range(256)) * 8])
def test_list_u8_via_host(fctest: tuple[Engine, Component], data: bytes) -> None:
    def run() -> Any:
        t = Fctest(*fctest)
        return outcome(lambda: t.call("bytes-via-host", data)), t.seen

    stock, patched = both(run)
    assert patched == stock == (("ok", ("bytes", data)), [("bytes", data)])


@pytest.mark.e2e
def test_typed_rows_from_a_host_function(fctest: tuple[Engine, Component]) -> None:
    def run() -> Any:
        t = Fctest(*fctest)
        return [outcome(lambda: t.call("rows-via-host", 0)),
                outcome(lambda: t.call("rows-via-host", 1)),
                outcome(lambda: t.call("rows-via-host", 100))]

    stock, patched = both(run)
    assert patched == stock
    assert stock[2] == ("ok", canon(host_rows(100)))


@pytest.mark.e2e
def test_no_params_no_result_and_several_params(fctest: tuple[Engine, Component]) -> None:
    def run() -> Any:
        t = Fctest(*fctest)
        return [outcome(lambda: t.call("tick-via-host")), t.seen,
                outcome(lambda: t.call("pair", "abc", (-1, "def"))),
                outcome(lambda: t.call("pair", "x")),
                outcome(lambda: t.call("pair", "x", (1, "y"), 3)),
                outcome(lambda: t.call("pair", "x", [1, "y"]))]

    stock, patched = both(run)
    assert patched == stock
    assert stock[:3] == [("ok", ("NoneType", None)), ["tick"], ("ok", canon((2, "abcdef")))]
    assert stock[3][:2] == ("raised", "TypeError")


@pytest.mark.e2e
@pytest.mark.parametrize("bad", sorted(BAD))
def test_conversion_errors_are_the_same(fctest: tuple[Engine, Component], bad: str) -> None:
    def run() -> Any:
        t = Fctest(*fctest)
        failed = outcome(lambda: t.call("echo", BAD[bad]))
        # a failed lowering of params happens before wasm is entered: the store still works
        return failed, outcome(lambda: t.call("echo", SAMPLES["base"]))

    stock, patched = both(run)
    assert patched == stock
    assert stock[0][0] == "raised"
    assert stock[1] == ("ok", canon(SAMPLES["base"]))


@pytest.mark.e2e
@pytest.mark.parametrize("bad", ["unknown-tag", "no-num-case", "list-for-bytes"])
def test_bad_host_function_results_fail_the_same(fctest: tuple[Engine, Component],
                                                 bad: str) -> None:
    def run() -> Any:
        t = Fctest(*fctest, echo_result=BAD[bad])
        return outcome(lambda: t.call("via-host", SAMPLES["base"]))

    stock, patched = both(run)
    assert patched == stock
    assert stock[0] == "raised"


@pytest.mark.e2e
def test_patched_linkers_use_the_cached_host_callback(fctest: tuple[Engine, Component]) -> None:
    set_mode(True)
    t = Fctest(*fctest)
    before = len(fastconv._host_sigs)
    t.call("via-host", SAMPLES["base"])
    t.call("rows-via-host", 3)
    t.call("rows-via-host", 4)
    assert len(fastconv._host_sigs) == before + 2
    assert "_fastconv_sig" in vars(t.funcs["via-host"])


@pytest.mark.e2e
def test_threads_share_the_caches(fctest: tuple[Engine, Component]) -> None:
    set_mode(True)
    names = sorted(SAMPLES)
    errors: list[str] = []
    start = threading.Barrier(4)

    def worker(k: int) -> None:
        t = Fctest(*fctest)
        start.wait()
        for i in range(40):
            name = names[(i + k) % len(names)]
            export = ("echo", "via-host")[(i + k) % 2]
            got = outcome(functools.partial(t.call, export, SAMPLES[name]))
            if got != ("ok", canon(SAMPLES[name])):
                errors.append(f"thread {k} call {i} {export} {name}: {got!r:.200}")
            if outcome(lambda: t.call("rows-via-host", 50)) != ("ok", canon(host_rows(50))):
                errors.append(f"thread {k} call {i}: rows differ")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


@pytest.mark.e2e
def test_host_signature_cache_checks_the_type(fctest: tuple[Engine, Component]) -> None:
    """One host function index seen with two types (two components importing the same
    name differently) gets one cached signature per type, never the other's."""
    set_mode(True)
    t = Fctest(*fctest)
    echo_ty = t.funcs["echo"].type(t.store)
    pair_ty = t.funcs["pair"].type(t.store)
    bytes_ty = t.funcs["bytes-via-host"].type(t.store)
    idx = -12345  # never a real FUNCTIONS index
    try:
        a = fastconv._host_sig(idx, echo_ty.ptr())
        b = fastconv._host_sig(idx, pair_ty.ptr())
        c = fastconv._host_sig(idx, bytes_ty.ptr())
        assert len({id(a), id(b), id(c)}) == 3
        assert fastconv._host_sig(idx, pair_ty.ptr()) is b
        assert fastconv._host_sig(idx, echo_ty.ptr()) is a
        assert fastconv._host_sig(idx, bytes_ty.ptr()) is c
        # a fresh FuncType object of the same type matches the cached signature
        assert fastconv._host_sig(idx, t.funcs["echo"].type(t.store).ptr()) is a
        assert [type(ty).__name__ for ty in b.params] == ["String", "TupleType"]
        assert type(a.result).__name__ == "RecordType"
        assert [n for n, _ in a.result.fields][:3] == ["name", "data", "nums"]
    finally:
        fastconv._host_sigs.pop(idx, None)


@pytest.mark.e2e
def test_pinned_host_functions_learn_each_import_once(
        fctest: tuple[Engine, Component], monkeypatch: pytest.MonkeyPatch) -> None:
    """A pinned function's signature is learnt at its first call, then trusted; one
    function object added as two imports of different types keeps one per import."""
    set_mode(True)
    learnt: list[int] = []
    real = fastconv._host_sig

    def counting(idx: int, ty_raw: Any) -> Any:
        learnt.append(idx)
        return real(idx, ty_raw)

    monkeypatch.setattr(fastconv, "_host_sig", counting)
    t = Fctest(*fctest, pin=True)
    data = bytes(range(256))
    for sample in ("base", "big", "empties"):
        # echo and echo-bytes are the same pinned object: everything, then list<u8>
        assert outcome(lambda: t.call("via-host", SAMPLES[sample])) == (  # noqa: B023
            "ok", canon(SAMPLES[sample]))
        assert outcome(lambda: t.call("bytes-via-host", data)) == ("ok", ("bytes", data))
        assert outcome(lambda: t.call("rows-via-host", 3)) == ("ok", canon(host_rows(3)))
    assert len(learnt) == len(set(learnt)) == 3  # each import once
    assert t.seen.count(("bytes", data)) == 3


@pytest.mark.e2e
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_pinned_and_checked_signatures_convert_the_same(fctest: tuple[Engine, Component],
                                                        sample: str) -> None:
    set_mode(True)
    out = []
    for pin in (False, True):
        t = Fctest(*fctest, pin=pin)
        out.append(([outcome(lambda: t.call("via-host", SAMPLES[sample]))  # noqa: B023
                     for _ in range(2)], t.seen))
    assert out[0] == out[1]
    assert out[1][0][1] == ("ok", canon(SAMPLES[sample]))


@pytest.mark.e2e
def test_bulk_lifted_lists_are_freed(fctest: tuple[Engine, Component]) -> None:
    """An export's result is the caller's to free: the bulk lift frees each list whole.
    300 results carrying 2,000 scalar variants of 64 bytes each leave the resident
    memory where it was; leaking them would add over 100 MiB. (A host function's
    arguments are freed by wasmtime after the call in any case.)"""
    set_mode(True)
    t = Fctest(*fctest)
    value = everything(sqls=[Variant("text", f"{i:064d}") for i in range(2000)])

    def rss_mib() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    for _ in range(30):  # warm: caches, the allocator's pools
        t.call("echo", value)
    before = rss_mib()
    for _ in range(300):
        t.call("echo", value)
    assert rss_mib() - before < 16


# --------------------------------------------------------------------------- real Host
@pytest.mark.e2e
def test_real_host_request_and_sqlite(build_guest: Callable[[Path], Path]) -> None:
    from wkhost.config import HostConfig
    from wkhost.core.host import Host
    from wkhost.types import ActorRef, Request, Sender

    app = CACHE / "fastconv_echo" / "app.py"
    app.parent.mkdir(parents=True, exist_ok=True)
    if not app.is_file() or app.read_text() != ECHO_ACTOR:
        tmp = app.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(ECHO_ACTOR)
        os.replace(tmp, app)
    wasm = build_guest(app)
    requests = [
        (Request("GET", "/", "", [], b""), Sender.public()),
        (Request("POST", "/x/ÿ", "a=1&b", [("x-a", "1"), ("x-b", "é")], bytes(range(256))),
         Sender.operator()),
        (Request("PUT", "/sql", "", [], b"\x00\xff"), Sender.of_actor(ActorRef("c", "i d"))),
    ]

    def run() -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            host = Host(HostConfig(data_dir=Path(tmp), cache_dir=CACHE / "compiled"))
            try:
                host.add_class("echo", wasm)
                host.start()
                ref = host.actor_ref("echo", "a")
                out = []
                for req, sender in requests * 2:
                    r = host.request(ref, req, sender)
                    out.append((r.status, r.headers, r.body))
                return out
            finally:
                host.close()

    stock, patched = both(run)
    assert patched == stock
    assert [body for _, _, body in stock] == [req.body for req, _ in requests] * 2
    assert "Value_Text(value='é\\x00')" in stock[2][1][0][1]


# ------------------------------------------------------------------------ installation
def test_refuses_other_wasmtime_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    fastconv.uninstall()
    monkeypatch.delenv("WKHOST_FASTCONV", raising=False)
    monkeypatch.setattr(fastconv, "wasmtime_version", lambda: "51.0.0")
    with pytest.raises(RuntimeError, match=r"50\.0\.1.*found 51\.0\.0"):
        fastconv.install()
    assert not fastconv.installed()
    assert wt_func.Func.__call__ is not fastconv._func_call


def test_pinned_version_is_the_one_installed() -> None:
    # pyproject pins wasmtime==50.0.1; a bump must come with a review of fastconv.py
    assert fastconv.wasmtime_version() == fastconv.WASMTIME_VERSION == "50.0.1"


def test_env_switch_disables(monkeypatch: pytest.MonkeyPatch) -> None:
    fastconv.uninstall()
    monkeypatch.setenv("WKHOST_FASTCONV", "0")
    assert fastconv.install() is False
    assert not fastconv.installed()


def test_install_is_idempotent_and_uninstall_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WKHOST_FASTCONV", raising=False)
    fastconv.uninstall()
    originals = (wt_func.Func.__call__, wt_linker.func_impl, wt_types.RecordType.fields,
                 wt_types.VariantLikeType._lower)
    assert fastconv.install() and fastconv.install()
    assert wt_func.Func.__call__ is fastconv._func_call
    assert wt_linker.func_impl is fastconv._func_impl
    assert wt_types.VariantLikeType._lower is fastconv._lower
    fastconv.uninstall()
    assert (wt_func.Func.__call__, wt_linker.func_impl, wt_types.RecordType.fields,
            wt_types.VariantLikeType._lower) == originals
    assert not fastconv.installed()
