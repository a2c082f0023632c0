"""The generated bindings, fresh, for one test module: `componentize-py bindings` into a
directory of its own, imported with the SDK's bound modules (`wkguest._bindings` and the
interface modules over it) made anew, and afterwards every module as it was before.

As it was, not merely forgotten: a module imported against these bindings and left in
sys.modules (say wkguest.workflow's, holding the interface modules it imported) would
call them later; and a test kit (wkhost.testkit) may have put its own bindings in place
in this process before, which its later tests need back."""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import cast

import wkguest
from wkhost.engine.componentize import WIT_DIR, componentize_command

GENERATED = ("wit_world", "componentize_py_types", "componentize_py_async_support", "poll_loop")


def _holding_bindings() -> set[str]:
    """The modules that are bindings, or hold one, directly or through another."""
    held = {n for n in sys.modules if n.split(".")[0] in GENERATED} | {"wkguest._bindings"}
    while True:
        more = {n for n, m in list(sys.modules.items()) if n not in held
                and n.startswith("wkguest.") and any(
                    isinstance(v, ModuleType) and v.__name__ in held
                    for v in vars(m).values())}
        if not more:
            return held & set(sys.modules)
        held |= more


@contextlib.contextmanager
def fresh_bindings(out: Path) -> Iterator[ModuleType]:
    """`wit_world.imports`, generated into `out`; sys.modules restored afterwards."""
    cmd = [*componentize_command(), "-d", str(WIT_DIR), "-w", "actor", "bindings", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    saved, attrs = dict(sys.modules), dict(wkguest.__dict__)
    for name in _holding_bindings():  # what holds other bindings goes, and is made anew
        gone = sys.modules.pop(name)
        parent, _, leaf = name.rpartition(".")
        if parent == "wkguest" and wkguest.__dict__.get(leaf) is gone:
            del wkguest.__dict__[leaf]  # else `from wkguest import leaf` finds it there
    sys.path.insert(0, str(out))
    try:
        import wit_world.imports as imports

        for each in pkgutil.iter_modules(imports.__path__):  # each interface, as a build has
            importlib.import_module(f"wit_world.imports.{each.name}")
        yield cast(ModuleType, imports)
    finally:
        sys.path.remove(str(out))
        sys.modules.clear()
        sys.modules.update(saved)
        wkguest.__dict__.clear()
        wkguest.__dict__.update(attrs)
