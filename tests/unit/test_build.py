"""wkhost.engine.build: the cache key, the cache under concurrency, and the build errors.

The tests marked slow run componentize-py for real (~5 s each): its error output is the
thing under test there.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from wkguest.workflow.serve import PROTOCOL
from wkhost.engine import build, build_cache, componentize
from wkhost.engine.build import BuildError, build_component, cached_build, main
from wkhost.engine.build_cache import cache_key
from wkhost.engine.components import component_protocols
from wkhost.errors import HostError

GOOD_APP = """\
from wkguest import Actor, export

class App(Actor):
    pass

Handler = export(App)
"""


@pytest.fixture
def app(tmp_path: Path) -> Path:
    d = tmp_path / "src"
    d.mkdir()
    (d / "app.py").write_text(GOOD_APP)
    return d / "app.py"


# ---- cache key ----------------------------------------------------------------------


def test_key_is_stable_when_nothing_changes(app: Path) -> None:
    assert cache_key(app) == cache_key(app)
    app.touch()  # mtime is not an input
    assert cache_key(app) == cache_key(Path(str(app)))


def test_key_changes_with_the_python_the_app_imports(app: Path) -> None:
    before = cache_key(app)
    app.write_text(GOOD_APP + "\n# edited\n")
    edited = cache_key(app)
    assert edited != before
    (app.parent / "helper.py").write_text("X = 1\n")  # beside it, not imported
    assert cache_key(app) == edited
    app.write_text("import helper\nimport pkg\n" + GOOD_APP)
    importing = cache_key(app)
    pkg = app.parent / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    assert cache_key(app) != importing  # tests/unit/test_build_keys.py has the rest


def test_key_ignores_non_python_files_and_caches(app: Path) -> None:
    before = cache_key(app)
    (app.parent / "README.md").write_text("docs")
    (app.parent / "__pycache__").mkdir()
    (app.parent / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00")
    assert cache_key(app) == before


def test_key_covers_module_name_and_extra_paths(app: Path, tmp_path: Path) -> None:
    other = app.parent / "other.py"
    other.write_text(GOOD_APP)
    assert cache_key(other) != cache_key(app)  # same files, another module is built
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "util.py").write_text("Y = 1\n")
    app.write_text("import util\n" + GOOD_APP)
    with_lib = cache_key(app, [lib])
    assert with_lib != cache_key(app)  # util found in lib, against not found at all
    (lib / "util.py").write_text("Y = 2\n")
    assert cache_key(app, [lib]) != with_lib


def test_key_covers_sdk_and_wit(app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache_key(app)
    wit = tmp_path / "wit"
    wit.mkdir()
    (wit / "world.wit").write_text("package a:b;")
    monkeypatch.setattr(build_cache, "WIT_DIR", wit)
    assert cache_key(app) != before
    monkeypatch.setattr(build_cache, "componentize_version", lambda: "9.9.9")
    assert cache_key(app) != before


# ---- the cache ----------------------------------------------------------------------


def _fake_builder(calls: list[Path], delay: float = 0.0) -> Callable[..., Path]:
    def fake(app: Path, out: Path, extra_paths: object = (), progress: object = None) -> Path:
        calls.append(out)
        time.sleep(delay)  # long enough for the other threads to queue on the lock
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(b"\x00asm fake")
        tmp.replace(out)
        return out

    return fake


def test_cached_build_builds_once(
    app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(build, "build_component", _fake_builder(calls))
    cache = tmp_path / "cache"
    lines: list[str] = []
    first = cached_build(app, cache)
    second = cached_build(app, cache, progress=lines.append)
    assert first == second and first.read_bytes() == b"\x00asm fake" and len(calls) == 1
    assert first.name.startswith("src-")  # app.py is named after its directory
    assert lines and "cached" in lines[0]
    app.write_text(GOOD_APP + "# v2\n")
    assert cached_build(app, cache) != first and len(calls) == 2


def test_concurrent_callers_share_one_build(
    app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(build, "build_component", _fake_builder(calls, delay=0.3))
    cache = tmp_path / "cache"
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(cached_build(app, cache)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(results)) == 1 and len(results) == 4


def test_old_builds_of_an_app_are_pruned(
    app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "build_component", _fake_builder([]))
    cache = tmp_path / "cache"
    (cache).mkdir()
    (cache / "unrelated.wasm").write_bytes(b"x")
    for i in range(build.KEEP_PER_APP + 2):
        app.write_text(GOOD_APP + f"# v{i}\n")
        cached_build(app, cache)
        time.sleep(0.01)  # distinct mtimes
    assert len(list(cache.glob("src-*.wasm"))) == build.KEEP_PER_APP
    assert (cache / "unrelated.wasm").exists()


# ---- errors found before building ---------------------------------------------------------


def test_missing_app(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="app file not found: .*nope.py"):
        build_component(tmp_path / "nope.py", tmp_path / "x.wasm")
    with pytest.raises(BuildError, match="app file not found: .*nope.py"):
        cached_build(tmp_path / "nope.py", tmp_path / "cache")
    assert issubclass(BuildError, HostError)


@pytest.mark.parametrize("name", ["actor.py", "wit_world.py", "my-app.py", "app.txt"])
def test_unusable_module_names(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(GOOD_APP)
    with pytest.raises(BuildError):
        build_component(tmp_path / name, tmp_path / "x.wasm")


def test_missing_extra_path(app: Path, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="--path is not a directory"):
        build_component(app, tmp_path / "x.wasm", [tmp_path / "nope"])


def test_syntax_error_is_found_before_building(
    app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fast path, as on a host whose Python is at least the guest's.
    monkeypatch.setattr(build, "GUEST_PYTHON", (3, 0))
    monkeypatch.setattr(build, "run_componentize", _must_not_run)
    app.write_text("x = 1\n\ndef f(:\n    pass\n")
    with pytest.raises(BuildError) as info:
        build_component(app, tmp_path / "x.wasm")
    assert f"syntax error at {app}:3" in str(info.value)
    assert "def f(:" in info.value.details


def _must_not_run(*args: object) -> None:
    raise AssertionError("componentize-py must not run")


def test_guest_paths_are_mapped_back() -> None:
    paths = [Path("/src/app"), Path("/tmp/sdk")]
    out = componentize._unmangle('File "/0/app.py", line 3\nFile "/1/wkguest/x.py"\n"/7/z"', paths)
    assert out == 'File "/src/app/app.py", line 3\nFile "/tmp/sdk/wkguest/x.py"\n"/7/z"'


# ---- errors only componentize-py finds (real runs) -----------------------------------------


@pytest.mark.slow
def test_syntax_error_reported_by_the_guest_python(app: Path, tmp_path: Path) -> None:
    app.write_text("x = 1\n\ndef f(:\n    pass\n")
    with pytest.raises(BuildError) as info:
        build_component(app, tmp_path / "x.wasm")
    assert f"syntax error at {app}:3" in str(info.value)
    assert not (tmp_path / "x.wasm").exists()
    assert not list(tmp_path.glob(".x.wasm.*"))  # no temp file left behind


@pytest.mark.slow
def test_missing_module(app: Path, tmp_path: Path) -> None:
    app.write_text("import no_such_module_xyz\n" + GOOD_APP)
    with pytest.raises(BuildError) as info:
        build_component(app, tmp_path / "x.wasm")
    msg = str(info.value)
    assert "module 'no_such_module_xyz' not found" in msg and "--path" in msg
    assert "\n" not in msg  # a one-line summary; the traceback is in .details
    assert f'File "{app}", line 1' in info.value.details


@pytest.mark.slow
def test_app_without_handler(app: Path, tmp_path: Path) -> None:
    app.write_text("X = 1\n")
    with pytest.raises(BuildError, match="does not define Handler"):
        build_component(app, tmp_path / "x.wasm")


@pytest.mark.slow
def test_a_build_leaves_no_bytecode_beside_the_sources_and_declares_its_protocol(
        tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("STEPS = 1\n")
    (src / "app.py").write_text(
        "from wkguest import workflow\n\nimport pkg\n\n\n"
        "def flow(wf: workflow.Run, input: object) -> object:\n    return pkg.STEPS\n\n\n"
        "Handler = workflow.serve(flow)\n")
    out = tmp_path / "flow.wasm"
    done = subprocess.run([sys.executable, "-m", "wkhost.cli", "build", str(src / "app.py"),
                           "-o", str(out), "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert f"app.py declares {PROTOCOL}" in done.stderr
    assert component_protocols(out) == {PROTOCOL}
    assert sorted(p.relative_to(src).as_posix() for p in src.rglob("*")) == [
        "app.py", "pkg", "pkg/__init__.py"]


@pytest.mark.slow
def test_real_build_of_the_counter_example(build_guest: Callable[[str], Path]) -> None:
    wasm = build_guest("counter")
    head = wasm.read_bytes()[:8]
    assert head == b"\x00asm\x0d\x00\x01\x00"  # a component, not a core module
    assert build_guest("counter") == wasm


# ---- the command ----------------------------------------------------------------------


def test_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["build", "app.py"])  # no -o
    assert info.value.code == 2
    assert main(["build", "app.txt", "-o", str(tmp_path / "x.wasm")]) == 2
    with pytest.raises(SystemExit) as info:
        main(["build", "--help"])
    assert info.value.code == 0
    assert "--no-cache" in capsys.readouterr().out


def test_cli_build_error_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(tmp_path / "nope.py"), "-o", str(tmp_path / "x.wasm")]) == 1
    assert "app file not found" in capsys.readouterr().err


def test_cli_copies_from_the_cache(
    app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "build_component", _fake_builder([]))
    out = tmp_path / "out" / "app.wasm"
    argv = ["build", str(app), "-o", str(out), "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 0
    assert out.read_bytes() == b"\x00asm fake"
