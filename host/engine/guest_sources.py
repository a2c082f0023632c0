"""What a build of an app reads of the user's files, and which protocols it declares,
found from the source alone (ast): nothing of the app is imported or run.

    src = app_sources(Path("orders/app.py"), extra_paths=[])
    src.modules     # {"app": ("app", "app.py"), "flow": ("app", "flow.py"), "json": None}
    src.files       # the files those are, to hash
    src.protocols   # {"wk-workflow/v1"} for an app whose Handler is workflow.serve(...)

The cache key of a build (host/engine/build_cache.py) hashes these files instead of the
app's whole directory, so that editing one guest does not rebuild its neighbours. To stay
sound:
- every import is followed, wherever it is (inside `if`, `try`, a function), since
  componentize-py imports whatever the app imports at build time; relative imports are
  resolved against the module's package;
- a name looked for and not found in the app's directories is kept as absent, so that a
  file of that name appearing later changes the key;
- what cannot be followed (an `importlib.import_module` or `__import__` of a computed
  name, a module the host's Python cannot parse) makes every .py file of the app's
  directories count (`whole`), as before.

Modules are looked for as the guest's Python does: in the app's directory, then the SDK,
then each --path directory (the order of componentize-py's -p options); in one directory
a package (with __init__.py) before a module, a directory without one being a portion of
a namespace package. `wkguest` is the SDK's, which the key hashes whole.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wkguest.workflow.serve import PROTOCOL as WORKFLOW_PROTOCOL

SDK_PACKAGE = "wkguest"
# Calls that make a class speak a protocol, by the function's qualified name.
PROTOCOL_MAKERS = {
    "wkguest.workflow.serve": WORKFLOW_PROTOCOL,
    "wkguest.workflow.serve.serve": WORKFLOW_PROTOCOL,
    # The Cloudflare-shaped API's serve(cls) serves a workflow.serve of its own function.
    "wkguest.cloudflare.serve": WORKFLOW_PROTOCOL,
    "wkguest.cloudflare.entrypoint.serve": WORKFLOW_PROTOCOL,
}
_DYNAMIC_IMPORTS = {"importlib.import_module", "__import__", "import_module"}
_HANDLER = "Handler"


@dataclass(frozen=True)
class Found:
    """Where a module is: its file (None for a namespace package), the directories its
    submodules are looked for in, each as (root label, path); `sdk` for wkguest's."""

    file: tuple[str, Path] | None = None
    search: tuple[tuple[str, Path], ...] = ()
    sdk: bool = False


@dataclass
class Sources:
    roots: list[tuple[str, Path]]
    modules: dict[str, Found | None] = field(default_factory=dict)  # None: absent
    trees: dict[Path, ast.Module | None] = field(default_factory=dict)  # None: unparsed
    whole: bool = False
    protocols: frozenset[str] = frozenset()

    @property
    def files(self) -> list[tuple[str, Path]]:
        """(root label, file) of every module found in the user's directories, sorted."""
        return sorted({f.file for f in self.modules.values() if f and f.file})


def app_sources(app: Path, extra_paths: Sequence[Path] = ()) -> Sources:
    """Follow `app`'s imports through its directory and `extra_paths` (see the module's
    doc). Raises OSError if a file found cannot be read."""
    app = Path(app).resolve()
    roots = [("app", app.parent), ("sdk", Path()),
             *((f"extra{i}", Path(p).resolve()) for i, p in enumerate(extra_paths))]
    src = Sources(roots)
    _follow(src, app.stem, Found(file=("app", app)))
    src.protocols = frozenset(_protocols(src, app.stem, set()))
    return src


# -- following the imports --------------------------------------------------------------
def _follow(src: Sources, name: str, found: Found) -> None:
    src.modules[name] = found
    todo = [(name, found)]
    while todo:
        module, where = todo.pop()
        assert where.file is not None
        tree = _parse(src, where.file[1])
        if tree is None:
            src.whole = True
            continue
        is_package = where.file[1].name == "__init__.py"
        for wanted in _imported(src, tree, module, is_package):
            for each in _with_parents(wanted):
                if each in src.modules:
                    continue
                got = src.modules[each] = _find(src, each)
                if got is not None and got.file is not None and not got.sdk:
                    todo.append((each, got))


def _parse(src: Sources, path: Path) -> ast.Module | None:
    if path not in src.trees:
        try:
            src.trees[path] = ast.parse(path.read_bytes(), str(path))
        except (SyntaxError, ValueError):  # newer syntax than the host's Python, or NUL
            src.trees[path] = None
    return src.trees[path]


def _imported(src: Sources, tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is None:
                continue  # a relative import beyond the top: it fails in the guest too
            if base:
                yield base
            yield from (f"{base}.{a.name}" if base else a.name
                        for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call) and _dotted(node.func) in _DYNAMIC_IMPORTS:
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    and not arg.value.startswith("."):
                yield arg.value
            else:
                src.whole = True


def _absolute(name: str | None, level: int, package: str) -> str | None:
    """The absolute name of `from <level dots><name> import ...` in `package`; None for
    one that reaches above the top-level package (an ImportError in the guest too)."""
    if not level:
        return name or ""
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return None
    base = ".".join(parts[:len(parts) - (level - 1)])
    return f"{base}.{name}" if name else base


def _with_parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


def _find(src: Sources, name: str) -> Found | None:
    parent, _, last = name.rpartition(".")
    if parent:
        above = src.modules.get(parent)
        if above is None or above.sdk:
            return above  # absent stays absent; the SDK's submodules are the SDK's
        search = above.search
    else:
        search = tuple(src.roots)
    portions = []
    for label, d in search:
        if label == "sdk":
            if last == SDK_PACKAGE:
                return Found(sdk=True)
            continue
        if (d / last / "__init__.py").is_file():
            return Found((label, d / last / "__init__.py"), ((label, d / last),))
        if (d / f"{last}.py").is_file():
            return Found((label, d / f"{last}.py"))
        if (d / last).is_dir():
            portions.append((label, d / last))
    return Found(search=tuple(portions)) if portions else None


# -- the protocols ------------------------------------------------------------------------
def _protocols(src: Sources, module: str, seen: set[str]) -> set[str]:
    """The protocols of the module-level calls in `module` that make classes which speak
    one, and in the modules its `Handler` is imported from."""
    found = src.modules.get(module)
    seen.add(module)
    if found is None or found.file is None or found.sdk:
        return set()
    tree = src.trees.get(found.file[1])
    if tree is None:
        return set()
    aliases = _aliases(tree)
    out = {PROTOCOL_MAKERS[q] for node in _module_level_calls(tree.body)
           if (q := _qualified(node.func, aliases)) in PROTOCOL_MAKERS}
    for origin in _handler_origins(tree, module, found):
        if origin not in seen:
            out |= _protocols(src, origin, seen)
    return out


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported, through `if`, `try`, `with`
    and loops; not those of a function or of a class's body."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        yield stmt
        if isinstance(stmt, ast.ClassDef):
            continue
        for part in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(stmt, part, None)
            if isinstance(inner, list):
                yield from _module_level(_stmts(inner))


def _stmts(items: list[ast.AST]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for item in items:
        if isinstance(item, ast.stmt):
            out.append(item)
        elif isinstance(item, ast.ExceptHandler | ast.match_case):
            out.extend(item.body)
    return out


def _module_level_calls(body: list[ast.stmt]) -> Iterator[ast.Call]:
    for stmt in _module_level(body):
        for node in _walk_expressions(stmt):
            if isinstance(node, ast.Call):
                yield node


def _walk_expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of `stmt` itself, not of the statements nested in it (walked on their
    own) nor inside a lambda or a function."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt | ast.Lambda | ast.ExceptHandler
                              | ast.match_case):
                todo.append(child)


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound by imports, to the qualified names they stand for."""
    names: dict[str, str] = {}
    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    names[top] = top
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for a in stmt.names:
                names[a.asname or a.name] = f"{stmt.module}.{a.name}"
    return names


def _qualified(func: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(func, ast.Name):
        return aliases.get(func.id)
    if isinstance(func, ast.Attribute):
        base = _qualified(func.value, aliases)
        return f"{base}.{func.attr}" if base else None
    return None


def _dotted(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = _dotted(func.value)
        return f"{base}.{func.attr}" if base else None
    return None


def _handler_origins(tree: ast.Module, module: str, found: Found) -> Iterator[str]:
    """The modules `Handler` is imported from at module level (`from x import Handler`,
    or `*`)."""
    is_package = found.file is not None and found.file[1].name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.ImportFrom) and any(
                (a.asname or a.name) == _HANDLER or a.name == "*" for a in stmt.names):
            base = _absolute(stmt.module, stmt.level, package)
            if base:
                yield base
