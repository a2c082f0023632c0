"""The layout's size ceilings, checked by `make lint`: no module over MODULE_LINES and
no function over FUNCTION_LINES, in the host and the guest SDK.

    .venv/bin/python -m tests.lint.ceilings host guest_sdk/wkguest

Why ceilings: a module holds one concern and a function one step; past these sizes both
have, every time so far, been holding two. A function's size counts from its `def` to its
last line, decorators excluded, nested functions included in their parent.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MODULE_LINES = 300
FUNCTION_LINES = 40

# Modules allowed past both ceilings, each with its reason.
EXEMPT = {
    "host/engine/fastconv.py": (
        "a patch of wasmtime-py's value conversion, pinned to one wasmtime version, that "
        "mirrors upstream's structure function for function so it can be diffed against it"
    ),
}


@dataclass(frozen=True)
class Breach:
    path: str
    line: int
    what: str
    lines: int
    ceiling: int

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: {self.what} has {self.lines} lines "
                f"(ceiling {self.ceiling})")


def breaches(path: Path, shown_as: str) -> Iterator[Breach]:
    text = path.read_text()
    count = len(text.splitlines())
    ceiling = MODULE_LINES
    if count > ceiling:
        yield Breach(shown_as, 1, "the module", count, ceiling)
    for node in ast.walk(ast.parse(text, filename=shown_as)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > FUNCTION_LINES:
                yield Breach(shown_as, node.lineno, f"{node.name}()", size, FUNCTION_LINES)


def check(roots: list[Path], base: Path) -> list[Breach]:
    found: list[Breach] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            shown_as = path.resolve().relative_to(base.resolve()).as_posix()
            if shown_as not in EXEMPT:
                found.extend(breaches(path, shown_as))
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.lint.ceilings DIR [DIR ...]", file=sys.stderr)
        return 2
    found = check([Path(a) for a in argv], Path.cwd())
    for breach in found:
        print(breach)
    if found:
        print(f"{len(found)} over the ceilings: split them by concern (see docs/architecture.md)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
