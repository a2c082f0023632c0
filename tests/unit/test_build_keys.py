"""A build's cache key covers the files the app imports (host/engine/guest_sources.py), not its
whole directory: a neighbouring guest's edit rebuilds nothing, and the key stays sound.
And the protocols a build declares, found from the app's source.

Pure unit tests on files in tmp_path: nothing is built.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from wkguest.workflow.serve import PROTOCOL
from wkhost.engine.build_cache import cache_key
from wkhost.engine.guest_sources import app_sources

PLAIN = "from wkguest import Actor, export\n\nclass A(Actor):\n    pass\n\nHandler = export(A)\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    d = tmp_path / "src"
    write(d, {"one.py": "import helper\n" + PLAIN, "two.py": "import other\n" + PLAIN,
              "helper.py": "X = 1\n", "other.py": "Y = 1\n"})
    return d


def test_a_neighbours_edit_does_not_change_the_key(src: Path) -> None:
    one, two = cache_key(src / "one.py"), cache_key(src / "two.py")
    write(src, {"two.py": "import other\n" + PLAIN + "# edited\n", "other.py": "Y = 2\n",
                "three.py": PLAIN, "notes.txt": "x"})
    assert cache_key(src / "one.py") == one
    assert cache_key(src / "two.py") != two


def test_an_imported_file_changes_the_key_however_deep(src: Path) -> None:
    before = cache_key(src / "one.py")
    write(src, {"helper.py": "import deeper\nX = 1\n", "deeper.py": "Z = 1\n"})
    with_deeper = cache_key(src / "one.py")
    assert with_deeper != before
    write(src, {"deeper.py": "Z = 2\n"})
    assert cache_key(src / "one.py") != with_deeper


def test_a_file_that_would_shadow_an_import_changes_the_key(src: Path) -> None:
    write(src, {"one.py": "import json\n" + PLAIN})
    before = cache_key(src / "one.py")
    write(src, {"json.py": "# the guest's path has the app's directory before the stdlib\n"})
    assert cache_key(src / "one.py") != before


@pytest.mark.parametrize("importing", [
    "try:\n    import helper\nexcept ImportError:\n    helper = None\n",
    "if False:\n    import helper\n",
    "def later():\n    import helper\n",
    "from helper import X\n",
    "import importlib\nmod = importlib.import_module('helper')\n",
])
def test_conditional_and_late_imports_count(tmp_path: Path, importing: str) -> None:
    write(tmp_path, {"app.py": importing + PLAIN, "helper.py": "X = 1\n"})
    before = cache_key(tmp_path / "app.py")
    write(tmp_path, {"helper.py": "X = 2\n"})
    assert cache_key(tmp_path / "app.py") != before


def test_packages_relative_imports_and_submodules(tmp_path: Path) -> None:
    write(tmp_path, {
        "app.py": "from pkg import sub\nimport ns.mod\n" + PLAIN,
        "pkg/__init__.py": "from . import sibling\nfrom .deep.leaf import Y\n",
        "pkg/sub.py": "", "pkg/sibling.py": "", "pkg/deep/__init__.py": "",
        "pkg/deep/leaf.py": "Y = 1\n", "pkg/unused.py": "",
        "ns/mod.py": "from .. import nothing_above_the_top\n",  # ns has no __init__.py
    })
    src = app_sources(tmp_path / "app.py")
    assert {p.relative_to(tmp_path).as_posix() for _, p in src.files} == {
        "app.py", "pkg/__init__.py", "pkg/sub.py", "pkg/sibling.py", "pkg/deep/__init__.py",
        "pkg/deep/leaf.py", "ns/mod.py"}
    assert not src.whole
    before = cache_key(tmp_path / "app.py")
    write(tmp_path, {"pkg/unused.py": "# not imported\n"})
    assert cache_key(tmp_path / "app.py") == before
    for name in ("pkg/deep/leaf.py", "ns/mod.py", "pkg/sub.py"):
        write(tmp_path, {name: "# edited\n"})
        assert cache_key(tmp_path / "app.py") != before, name
        before = cache_key(tmp_path / "app.py")


def test_modules_of_an_extra_path_count_and_the_app_directory_comes_first(
        tmp_path: Path) -> None:
    app_dir, lib = tmp_path / "app", tmp_path / "lib"
    write(app_dir, {"app.py": "import shared\n" + PLAIN})
    write(lib, {"shared.py": "A = 1\n", "unused.py": ""})
    before = cache_key(app_dir / "app.py", [lib])
    write(lib, {"unused.py": "# edited\n"})
    assert cache_key(app_dir / "app.py", [lib]) == before
    write(lib, {"shared.py": "A = 2\n"})
    in_lib = cache_key(app_dir / "app.py", [lib])
    assert in_lib != before
    write(app_dir, {"shared.py": "A = 3\n"})  # shadows lib's, as -p order does in the guest
    src = app_sources(app_dir / "app.py", [lib])
    assert [(label, p.name) for label, p in src.files] == [("app", "app.py"),
                                                           ("app", "shared.py")]
    assert cache_key(app_dir / "app.py", [lib]) != in_lib


@pytest.mark.parametrize("unfollowable", [
    "import importlib\nname = 'x'\nmod = importlib.import_module(name)\n",
    "mod = __import__('na' + 'me')\n",
])
def test_an_import_the_walk_cannot_follow_counts_every_file(
        tmp_path: Path, unfollowable: str) -> None:
    write(tmp_path, {"app.py": unfollowable + PLAIN, "anything.py": ""})
    assert app_sources(tmp_path / "app.py").whole
    before = cache_key(tmp_path / "app.py")
    write(tmp_path, {"anything.py": "# edited\n"})
    assert cache_key(tmp_path / "app.py") != before


def test_a_module_the_host_cannot_parse_counts_every_file(tmp_path: Path) -> None:
    write(tmp_path, {"app.py": "import helper\n" + PLAIN, "helper.py": "def f(:\n",
                     "anything.py": ""})
    assert app_sources(tmp_path / "app.py").whole
    before = cache_key(tmp_path / "app.py")
    write(tmp_path, {"anything.py": "# edited\n"})
    assert cache_key(tmp_path / "app.py") != before


# -- the protocols ------------------------------------------------------------------------
FLOW = "def flow(wf, input):\n    return input\n\n"


@pytest.mark.parametrize("source", [
    "from wkguest import workflow\n" + FLOW + "Handler = workflow.serve(flow)\n",
    "from wkguest import workflow as w\n" + FLOW + "Handler = w.serve(flow, w.Config())\n",
    "from wkguest.workflow import serve\n" + FLOW + "Handler = serve(flow)\n",
    "from wkguest.workflow import serve as make\n" + FLOW + "Handler = make(flow)\n",
    "import wkguest.workflow\n" + FLOW + "Handler = wkguest.workflow.serve(flow)\n",
    "import wkguest.workflow as wf\n" + FLOW + "if True:\n    Handler = wf.serve(flow)\n",
    "from wkguest.workflow.serve import serve\n" + FLOW + "Handler = serve(flow)\n",
    "from wkguest import workflow\n" + FLOW + "workflow.serve(flow)\n",
])
def test_a_module_level_serve_declares_the_workflow_protocol(
        tmp_path: Path, source: str) -> None:
    write(tmp_path, {"app.py": source})
    assert app_sources(tmp_path / "app.py").protocols == {PROTOCOL}


@pytest.mark.parametrize("source", [
    PLAIN,
    "from wkguest import workflow\n" + FLOW + "def make():\n    return workflow.serve(flow)\n"
    + PLAIN,
    "from wkguest import workflow\n" + FLOW + "later = lambda: workflow.serve(flow)\n" + PLAIN,
    "from mylib import serve\n" + FLOW + "Handler = serve(flow)\n",  # another serve
    "from wkguest import workflow\nclient = workflow.Client('orders')\n" + PLAIN,
])
def test_anything_else_declares_nothing(tmp_path: Path, source: str) -> None:
    write(tmp_path, {"app.py": source})
    assert app_sources(tmp_path / "app.py").protocols == frozenset()


def test_a_handler_imported_from_the_apps_own_module_is_followed(tmp_path: Path) -> None:
    write(tmp_path, {
        "app.py": "from flows.orders import Handler\n",
        "flows/__init__.py": "",
        "flows/orders.py": "from wkguest import workflow\n" + FLOW
                           + "Handler = workflow.serve(flow)\n",
        "plain.py": "import flows.orders\n" + PLAIN,  # imports it, keeps its own Handler
    })
    assert app_sources(tmp_path / "app.py").protocols == {PROTOCOL}
    assert app_sources(tmp_path / "plain.py").protocols == frozenset()


def test_the_protocols_are_in_the_key(tmp_path: Path) -> None:
    write(tmp_path, {"app.py": "from wkguest import workflow\n" + FLOW
                     + "Handler = workflow.serve(flow)\n"})
    before = cache_key(tmp_path / "app.py")
    src = app_sources(tmp_path / "app.py")
    src.protocols = frozenset()
    assert cache_key(tmp_path / "app.py", sources=src) != before
