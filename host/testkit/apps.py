"""Loading a user's app module by its path, as `wkhost build app.py` would find it.

Each app is imported under its own module name (`app` for app.py, as in a component),
with its directory first on the path, and it and the modules it imports from that
directory stay its own (out of sys.modules once imported): two apps that each have a
`flow.py` beside them (the orders and the trip examples) get each their own `flow`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

_loaded: dict[Path, ModuleType] = {}


class AppError(Exception):
    """The app cannot be loaded: its file is missing, it raised, or it has no Handler."""


def _local_names(folder: Path) -> set[str]:
    names = {p.stem for p in folder.glob("*.py")}
    names |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return names


def _is_under(mod: ModuleType, folder: Path) -> bool:
    f = getattr(mod, "__file__", None)
    return f is not None and Path(f).resolve().is_relative_to(folder)


def load_app(path: str | Path) -> ModuleType:
    """The app module at `path`, imported once per process. Raises AppError."""
    file = Path(path).resolve()
    if file in _loaded:
        return _loaded[file]
    if not file.is_file():
        raise AppError(f"no app at {path}: give the path of its .py file")
    folder = file.parent
    own = _local_names(folder) - {file.stem}
    # Modules of the same names from elsewhere (another app's `flow`) step aside.
    stashed = {n: m for n, m in sys.modules.items()
               if n.split(".")[0] in own and not _is_under(m, folder)}
    for n in stashed:
        del sys.modules[n]
    # Under its own name, as in a component (its classes' __module__ is what a trap's
    # report names), for the import only: another app may have the same name.
    name = file.stem
    stashed_self = sys.modules.pop(name, None)
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except Exception as e:
        raise AppError(f"importing {path} raised {type(e).__name__}: {e}") from e
    finally:
        sys.path.remove(str(folder))
        for n in set(sys.modules) - before | {name}:  # its own modules: its alone
            if n.split(".")[0] in own | {name}:
                sys.modules.pop(n, None)
        sys.modules.update(stashed)
        if stashed_self is not None:
            sys.modules[name] = stashed_self
    _loaded[file] = module
    return module


def handler_of(module: ModuleType, where: str) -> type[Any]:
    """The app's exported `Handler` class. Raises AppError if it has none."""
    handler = getattr(module, "Handler", None)
    if not isinstance(handler, type) or not hasattr(handler, "handle"):
        raise AppError(f"{where} defines no Handler: export an actor class with "
                       "`Handler = export(MyActor)`, or `Handler = workflow.serve(fn)`")
    return handler
