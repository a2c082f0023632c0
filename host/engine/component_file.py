"""What a file named as a component is, read from its bytes alone: no guest code runs and
nothing is compiled (a compile takes seconds), so `wkhost serve` can refuse a wrong file
at once.

A wasm binary is an 8-byte preamble (b"\\0asm", a 2-byte version, a 2-byte layer: layer 0
is a core module, layer 1 a component) and then sections to the end of the file, each an
id byte, a LEB128 size and that many bytes. Only the top-level sections are read: the
custom ones (id 0: a name, then a payload), the imports (10) and the exports (11); every
other section is skipped by its size.

    info = read_component(Path("orders.wasm"))   # raises HostError if it is none
    info.imports, info.exports, info.protocols

The protocols a component answers are listed in its custom section `wk-protocols` (UTF-8,
one per line), which `wkhost build` appends; the host does not know what they mean.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import HostError

MAGIC = b"\0asm"
COMPONENT_VERSION = b"\x0d\x00"  # the component model's binary version wasmtime 50 reads
CORE_LAYER, COMPONENT_LAYER = b"\x00\x00", b"\x01\x00"
CUSTOM, IMPORT, EXPORT = 0, 10, 11
PROTOCOLS_SECTION = "wk-protocols"
# The WASI 0.2 packages `Linker.add_wasip2` provides (any 0.2.x: wasmtime matches semver).
WASI_PACKAGES = frozenset({"io", "clocks", "random", "cli", "filesystem", "sockets"})
# Imports and exports are read only from sections up to this size (theirs are a few
# dozen bytes); a bigger one is skipped like any other.
_NAMES_SECTION_MAX = 1 << 20


@dataclass(frozen=True)
class ComponentInfo:
    imports: tuple[str, ...] | None  # None: a section this reader does not understand
    exports: tuple[str, ...] | None
    protocols: frozenset[str]


def read_component(path: Path) -> ComponentInfo:
    """The top-level imports, exports and protocols of the component at `path`.
    Raises HostError naming the file and what it is instead: missing, not WebAssembly
    (a Python file said so), a core module, another binary version, truncated."""
    try:
        with open(path, "rb") as f:
            _check_preamble(path, f.read(8))
            return _read_sections(path, f)
    except FileNotFoundError:
        raise HostError(f"no component at {path}") from None
    except IsADirectoryError:
        raise HostError(f"{path} is not a component, it is a directory") from None


def component_protocols(wasm: Path) -> frozenset[str]:
    """The protocols the component at `wasm` declares (none without the section).
    Raises HostError as `read_component`."""
    return read_component(wasm).protocols


def protocols_section(protocols: frozenset[str] | set[str]) -> bytes:
    """The custom section that declares `protocols`, to append to a component."""
    return custom_section(PROTOCOLS_SECTION, "".join(f"{p}\n" for p in sorted(protocols)))


def custom_section(name: str, payload: str) -> bytes:
    raw_name, raw_payload = name.encode(), payload.encode()
    body = _leb128(len(raw_name)) + raw_name + raw_payload
    return bytes([CUSTOM]) + _leb128(len(body)) + body


# -- the preamble ------------------------------------------------------------------------
def _check_preamble(path: Path, head: bytes) -> None:
    if head[:4] != MAGIC:
        raise HostError(_not_wasm(path, head))
    if len(head) < 8:
        raise HostError(f"{path} is truncated: {len(head)} bytes, not even a wasm preamble")
    version, layer = head[4:6], head[6:8]
    if layer == CORE_LAYER:
        raise HostError(f"{path} is not a component, it is a core WebAssembly module: "
                        f"build the actor from its Python source with `wkhost build APP.py "
                        f"-o {path}`")
    if layer != COMPONENT_LAYER:
        raise HostError(f"{path} is WebAssembly of an unknown layer ({layer.hex()})")
    if version != COMPONENT_VERSION:
        raise HostError(f"{path} is a component of binary version 0x{version[0]:02x}; this "
                        f"host reads 0x{COMPONENT_VERSION[0]:02x}: rebuild it with `wkhost "
                        "build`")


def _not_wasm(path: Path, head: bytes) -> str:
    if not head:
        return f"{path} is not a component, it is empty"
    if path.suffix == ".py":
        return (f"{path} is not a component, it is a Python file: build it with "
                f"`wkhost build {path} -o {path.with_suffix('.wasm')}`")
    if looks_like_python(path):
        return (f"{path} is not a component, it holds Python source: build the actor's "
                f".py with `wkhost build APP.py -o {path}`")
    return f"{path} is not a component, nor any WebAssembly (it starts with {head[:8]!r})"


def looks_like_python(path: Path) -> bool:
    """Text that parses as Python and defines or imports something (a bare word parses
    as Python too)."""
    try:
        tree = ast.parse(path.read_bytes()[: 1 << 20])
    except (SyntaxError, ValueError, OSError):
        return False
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)
    return any(isinstance(node, kinds) for node in tree.body)


# -- the sections ------------------------------------------------------------------------
def _read_sections(path: Path, f: BinaryIO) -> ComponentInfo:
    size = f.seek(0, 2)
    f.seek(8)
    imports: list[str] | None = []
    exports: list[str] | None = []
    protocols: set[str] = set()
    for sid, start, length in _sections(path, f, size):
        if sid == CUSTOM or (sid in (IMPORT, EXPORT) and length <= _NAMES_SECTION_MAX):
            f.seek(start)
            body = f.read(length)
            if sid == CUSTOM:
                protocols |= _protocols(body)
            elif sid == IMPORT:
                imports = _extend(imports, _names(body, _skip_externdesc))
            else:
                exports = _extend(exports, _names(body, _skip_export_rest))
    return ComponentInfo(None if imports is None else tuple(imports),
                         None if exports is None else tuple(exports), frozenset(protocols))


def _sections(path: Path, f: BinaryIO, size: int) -> Iterator[tuple[int, int, int]]:
    """(id, payload offset, payload size) of each top-level section."""
    at = 8
    while at < size:
        f.seek(at)
        head = f.read(6)
        try:
            length, used = _read_leb128(head, 1)
        except IndexError:
            raise _truncated(path, at, size) from None
        start = at + used
        if start + length > size:
            raise _truncated(path, at, size, length)
        yield head[0], start, length
        at = start + length


def _truncated(path: Path, at: int, size: int, length: int | None = None) -> HostError:
    what = f"a section at byte {at} needs {length} bytes" if length is not None else \
        f"a section header at byte {at} is cut off"
    return HostError(f"{path} is truncated: {what}, but the file ends at byte {size} "
                     "(an interrupted copy or download?)")


def _protocols(body: bytes) -> set[str]:
    try:
        n, at = _read_leb128(body, 0)
    except IndexError:
        return set()
    if body[at:at + n] != PROTOCOLS_SECTION.encode():
        return set()
    text = body[at + n:].decode("utf-8", "replace")
    return {line.strip() for line in text.splitlines() if line.strip()}


def _extend(into: list[str] | None, names: list[str] | None) -> list[str] | None:
    return None if into is None or names is None else into + names


# -- names in the import and export sections ----------------------------------------------
# import ::= name' externdesc; export ::= name' sortidx (0x00 | 0x01 externdesc); name' is
# 0x00 or 0x01, then a LEB128 length and UTF-8. Anything else: None (not understood).
def _names(body: bytes, skip_rest: Callable[[bytes, int], int]) -> list[str] | None:
    try:
        count, at = _read_leb128(body, 0)
        names = []
        for _ in range(count):
            if body[at] not in (0, 1):
                return None
            n, at = _read_leb128(body, at + 1)
            names.append(body[at:at + n].decode())
            at = skip_rest(body, at + n)
        return names
    except (IndexError, ValueError, UnicodeDecodeError):
        return None



def _skip_externdesc(body: bytes, at: int) -> int:
    kind = body[at]
    if kind == 0x00:  # a core module: 0x11 and a type index
        if body[at + 1] != 0x11:
            raise ValueError("core sort")
        return _read_leb128(body, at + 2)[1]
    if kind in (0x01, 0x04, 0x05):  # func, component, instance: a type index
        return _read_leb128(body, at + 1)[1]
    if kind in (0x02, 0x03):  # value or type bound
        if kind == 0x03 and body[at + 1] == 0x01:  # (sub resource)
            return at + 2
        if body[at + 1] not in (0x00, 0x01):
            raise ValueError("bound")
        return _read_leb128(body, at + 2)[1]
    raise ValueError(f"externdesc {kind:#x}")


def _skip_export_rest(body: bytes, at: int) -> int:
    at += 2 if body[at] == 0x00 else 1  # the sort (a core sort takes a second byte)
    at = _read_leb128(body, at)[1]  # its index
    if body[at] == 0x00:
        return at + 1
    if body[at] == 0x01:
        return _skip_externdesc(body, at + 1)
    raise ValueError("export type")


def _read_leb128(data: bytes, at: int) -> tuple[int, int]:
    """(value, offset after it). Raises IndexError if `data` ends inside it."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _leb128(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


# -- the host's world ----------------------------------------------------------------------
@dataclass(frozen=True)
class World:
    imports: frozenset[str]  # the host's interfaces a component may import
    exports: frozenset[str]  # what it must export

    @classmethod
    def from_wit(cls, wit_dir: Path) -> World:
        """The world of the one package in `wit_dir`: every interface is importable but
        those the world exports (`types` is imported through `use`)."""
        text = "\n".join(p.read_text() for p in sorted(wit_dir.glob("*.wit")))
        pkg = re.search(r"^package\s+([\w:-]+)@([\w.+-]+)\s*;", text, re.M)
        if pkg is None:
            raise HostError(f"no package in the host's WIT ({wit_dir})")
        interfaces = set(re.findall(r"^interface\s+([\w-]+)", text, re.M))
        exported = set(re.findall(r"^\s*export\s+([\w-]+)\s*;", text, re.M))

        def full(name: str) -> str:
            return f"{pkg.group(1)}/{name}@{pkg.group(2)}"

        return cls(frozenset(map(full, interfaces - exported)), frozenset(map(full, exported)))

    def mismatch(self, info: ComponentInfo) -> str | None:
        """What about `info`'s names this world cannot serve, or None. Names only: a
        function's signature is checked when the component is compiled."""
        wrong = [] if info.imports is None else [n for n in info.imports if not self._has(n)]
        missing = [] if info.exports is None else sorted(self.exports - set(info.exports))
        parts = []
        if wrong:
            parts.append(f"it imports {', '.join(wrong)}, which this host does not provide")
        if missing:
            parts.append(f"it does not export {', '.join(missing)}")
        return "; ".join(parts) or None

    def _has(self, name: str) -> bool:
        if name in self.imports:
            return True
        m = re.fullmatch(r"wasi:([\w-]+)/[\w-]+@0\.2\.\d+", name)
        return m is not None and m.group(1) in WASI_PACKAGES


def check_component(path: Path, world: World) -> ComponentInfo:
    """`read_component`, and the world's check of its names. Raises HostError."""
    info = read_component(path)
    wrong = world.mismatch(info)
    if wrong is not None:
        raise HostError(f"{path} was not built for this host's world ({wrong}): build it "
                        "with this host's `wkhost build`")
    return info
