"""host/engine/component_file.py: what a component file is and which protocols it declares,
read from its top-level sections alone (nothing compiled, no guest code run).

Small components are made from WAT by wasmtime's own `wat2wasm`; the real ones are the
guests the suite builds (cached).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import wasmtime
import wkguest
from wasmtime.component import Component
from wkguest.workflow.serve import PROTOCOL
from wkhost.engine.component_file import (
    World,
    check_component,
    custom_section,
    protocols_section,
    read_component,
)
from wkhost.engine.components import component_protocols, load_component, make_engine
from wkhost.errors import HostError

REPO = Path(__file__).resolve().parents[2]
# What the real guests import and export, in the shape componentize-py writes them.
FOR_THIS_HOST = """(component
  (import "wasi:cli/stdout@0.2.9" (instance))
  (import "wk:host/types@0.1.0" (instance))
  (import "wk:host/sqlite@0.1.0" (instance))
  (instance $h)
  (export "wk:host/handler@0.1.0" (instance $h))
)"""


def component(tmp_path: Path, wat: str = FOR_THIS_HOST, name: str = "c.wasm",
              tail: bytes = b"") -> Path:
    path = tmp_path / name
    path.write_bytes(bytes(wasmtime.wat2wasm(wat)) + tail)
    return path


def world() -> World:
    return World.from_wit(wkguest.WIT_DIR)


def test_a_component_without_the_section_declares_nothing(tmp_path: Path) -> None:
    assert component_protocols(component(tmp_path)) == frozenset()


def test_the_section_is_read_back_and_wasmtime_still_loads_the_component(
        tmp_path: Path) -> None:
    section = protocols_section({PROTOCOL, "x-other/v2"})
    path = component(tmp_path, tail=custom_section("unrelated", "wk-workflow/v9\n") + section)
    assert component_protocols(path) == {PROTOCOL, "x-other/v2"}
    Component(make_engine(None), path.read_bytes())  # raises if the binary were broken


def test_the_section_is_id_0_a_size_a_name_and_lines() -> None:
    section = protocols_section({"b/v1", "a/v1"})
    payload = b"\x0cwk-protocolsa/v1\nb/v1\n"
    assert section == bytes([0, len(payload)]) + payload


def test_a_component_for_this_host_passes_the_world_check(tmp_path: Path) -> None:
    info = check_component(component(tmp_path), world())
    assert info.exports == ("wk:host/handler@0.1.0",)
    assert "wk:host/sqlite@0.1.0" in (info.imports or ())


@pytest.mark.parametrize("wat, says", [
    ('(component (import "wasi:http/types@0.2.0" (instance)))',
     "it imports wasi:http/types@0.2.0, which this host does not provide"),
    ('(component (import "wk:host/sqlite@0.0.9" (instance)) (instance $h) '
     '(export "wk:host/handler@0.0.9" (instance $h)))',
     "it imports wk:host/sqlite@0.0.9, which this host does not provide; it does not "
     "export wk:host/handler@0.1.0"),
    ("(component)", "it does not export wk:host/handler@0.1.0"),
])
def test_a_component_for_another_world_is_named_with_what_is_wrong(
        tmp_path: Path, wat: str, says: str) -> None:
    path = component(tmp_path, wat)
    with pytest.raises(HostError) as info:
        check_component(path, world())
    assert str(info.value).startswith(f"{path} was not built for this host's world")
    assert says in str(info.value)


def test_what_a_file_is_when_it_is_no_component(tmp_path: Path) -> None:
    cases = {
        "app.py": (b"from wkguest import Actor\n", "is not a component, it is a Python "
                   "file: build it with `wkhost build {p} -o {p_wasm}`"),
        "src.wasm": (b"import json\n\ndef f():\n    pass\n",
                     "is not a component, it holds Python source"),
        "text.wasm": (b"not wasm\n", "is not a component, nor any WebAssembly (it starts "
                      "with b'not wasm"),
        "empty.wasm": (b"", "is not a component, it is empty"),
        "core.wasm": (bytes(wasmtime.wat2wasm("(module)")),
                      "is not a component, it is a core WebAssembly module"),
        "old.wasm": (b"\0asm\x0a\x00\x01\x00", "a component of binary version 0x0a"),
        "short.wasm": (b"\0asm\x0d", "is truncated"),
    }
    for name, (data, says) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(HostError) as info:
            read_component(path)
        expected = says.format(p=path, p_wasm=path.with_suffix(".wasm"))
        assert str(info.value).startswith(str(path)) and expected in str(info.value), name


def test_a_truncated_component_says_where_it_ends(tmp_path: Path) -> None:
    whole = component(tmp_path).read_bytes()
    cut = tmp_path / "cut.wasm"
    cut.write_bytes(whole[:-3])
    with pytest.raises(HostError, match=rf"cut.wasm is truncated: .* ends at byte "
                                        rf"{len(whole) - 3}"):
        read_component(cut)


def test_a_missing_file_and_a_directory(tmp_path: Path) -> None:
    with pytest.raises(HostError, match="no component at"):
        read_component(tmp_path / "nope.wasm")
    with pytest.raises(HostError, match="is not a component, it is a directory"):
        read_component(tmp_path)


@pytest.mark.slow
def test_real_guests_declare_what_their_classes_answer(
        build_guest: Callable[[str], Path]) -> None:
    orders = build_guest("examples/workflows/orders/app.py")
    counter = build_guest("counter")
    assert component_protocols(orders) == {PROTOCOL}
    assert component_protocols(counter) == frozenset()
    for wasm in (orders, counter):
        check_component(wasm, world())
    # The suite's compile cache: compiled once for the e2e servers, loaded here.
    load_component(make_engine(None), orders, REPO / ".cache" / "compiled")
