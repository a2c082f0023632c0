"""Just enough of SQLite's lexer to check a tx step's statements before they run.

A tx step's function writes the instance's own tables inside the runner's transaction
(tx.py). Three things would break what that transaction promises, and each shows in the
statement's text once its comments are left out: a statement that ends or opens a
transaction (COMMIT, ROLLBACK, BEGIN, SAVEPOINT, ...), one that names the runner's or
the host's tables (`_wk_`), and a script of several statements (one could hide the
others). `statements` splits a script the way SQLite does, at each `;` outside string
literals, quoted identifiers and comments, except inside `CREATE TRIGGER ... END`.

A split can only err towards more statements than SQLite sees (a `CASE ... END;` inside
a trigger's body ends it early here), so a check can refuse what SQLite would take, never
take what it should refuse.
"""

from __future__ import annotations

import functools
import re

# A string literal, a quoted identifier (the three quotings SQLite takes), a comment, or
# a `;`. An unterminated one runs to the end, as SQLite reads it. The rest of the text
# is skipped by the regex engine, not by a loop in Python (slow in a guest).
_TOKENS = re.compile(
    r"'[^']*'?|\"[^\"]*\"?|`[^`]*`?|\[[^\]]*\]?|--[^\n]*|/\*.*?(?:\*/|\Z)|;", re.S)
_TRIGGER = re.compile(r"\s*CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TRIGGER\b", re.I)
_ENDS_TRIGGER = re.compile(r"\bEND\s*\Z", re.I)
_FIRST_WORD = re.compile(r"\s*([A-Za-z]+)")

# Statements that begin, end or nest a transaction: the runner's alone in a tx step.
TX_CONTROL = frozenset({"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"})
RESERVED = "_wk_"  # the runner's tables (`_wk_wf*`) and the host's (`_wk_host_*`)


def statements(sql: str) -> list[tuple[str, str]]:
    """Each statement of `sql` as (its text, its code): the code is the text with its
    comments blanked out, string literals and identifiers kept. Empty statements (only
    whitespace and comments) are left out."""
    out: list[tuple[str, str]] = []
    start = pos = 0
    code: list[str] = []
    for m in _TOKENS.finditer(sql):
        tok = m.group()
        code.append(sql[pos:m.start()])
        pos = m.end()
        if tok == ";" and not _open_trigger("".join(code)):
            _add(out, sql[start:m.start()], "".join(code))
            start, code = pos, []
        else:
            code.append(" " if tok[:2] in ("--", "/*") else tok)
    code.append(sql[pos:])
    _add(out, sql[start:], "".join(code))
    return out


def _open_trigger(code: str) -> bool:
    return _TRIGGER.match(code) is not None and _ENDS_TRIGGER.search(code) is None


def _add(out: list[tuple[str, str]], text: str, code: str) -> None:
    if code.strip():
        out.append((text.strip(), code))


def first_word(code: str) -> str:
    """The statement's first keyword, upper-case ("" if it starts otherwise)."""
    m = _FIRST_WORD.match(code)
    return m.group(1).upper() if m else ""


def names_reserved(code: str) -> bool:
    """Whether the code names `_wk_` anything, in any case (SQLite folds ASCII case).
    Quoted text counts: SQLite takes a 'string' as an identifier where one is expected."""
    return RESERVED in code.lower()


@functools.lru_cache(maxsize=512)
def refusal(sql: str) -> str | None:
    """Why a tx step's handle refuses `sql`, or None if it may run. Cached by text: a
    step's statements are almost always constants of the code."""
    found = statements(sql)
    if len(found) != 1:
        return (f"one statement per call, and this holds {len(found)}" if found
                else "the text holds no statement")
    code = found[0][1]
    word = first_word(code)
    if word in TX_CONTROL:
        return (f"{word} is refused: the step's transaction is the runner's, which commits "
                "it with the step's result (or rolls it back if the function raises)")
    if names_reserved(code):
        return (f"the statement names {RESERVED}... tables, which are the workflow "
                "runner's (_wk_wf*) and the host's (_wk_host_*)")
    return None
