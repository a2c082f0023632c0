"""Linear-time stand-ins for SQLite's built-in functions whose cost is quadratic.

SQLite's `instr(X, Y)` and `replace(X, Y, Z)` compare Y at every position of X, and
`trim(X, Y)` (with `ltrim` and `rtrim`) looks each character of X up in Y by a scan: a
cost of len(X) * len(Y) in one VM step, which neither the deadline nor the run slot's
hand-off can cut short (host/storage/watch.py). Even with values capped, one such call on
two values of a few MiB runs for hours. These do the same with Python's string search,
which is linear (two-way), and a character class, with SQLite's semantics: NULL in,
NULL out; a pattern or a set of characters read up to its first NUL; two BLOBs compared
as bytes in `instr`; anything else as text, converted the way SQLite converts it.
"""

from __future__ import annotations

import re
import threading
from typing import Any, cast

import apsw

_local = threading.local()


def _as_text(v: Any) -> str:
    """`v` as SQLite's own conversion to text makes it (a REAL as "1.0e+20", a BLOB read
    as UTF-8), done by SQLite on a connection of this thread's. The bytes of a BLOB that
    is not UTF-8 are kept as surrogates (`_result` gives them back)."""
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    conn: apsw.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = apsw.Connection(":memory:")
    return str(conn.execute("SELECT CAST(? AS TEXT)", (v,)).fetchall()[0][0])


def _result(text: str) -> str | bytes:
    """Text, or, where a BLOB that is not UTF-8 went in, its bytes as a BLOB: the one
    place these differ from SQLite's, whose text may hold such bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape")
    return text


def instr(x: Any, y: Any) -> int | None:
    if x is None or y is None:
        return None
    if isinstance(x, bytes) and isinstance(y, bytes):
        return x.find(y) + 1
    return _as_text(x).find(_as_text(y)) + 1


def _replace_function(limit: int) -> Any:
    def replace(x: Any, y: Any, z: Any) -> str | bytes | None:
        if x is None or y is None:
            return None
        text, old = _as_text(x), _as_text(y)
        if not old or old[0] == "\x00":  # SQLite reads the pattern as a C string here
            return _result(text)
        if z is None:
            return None
        new = _as_text(z)
        # Refused before it is built: a result over the cap would be refused anyway,
        # after taking (len(X) / len(Y)) * len(Z) characters of memory.
        if len(text) + text.count(old) * (len(new) - len(old)) > limit:
            raise apsw.TooBigError("string or blob too big")
        return _result(text.replace(old, new))

    return replace


def _trim_function(left: bool, right: bool) -> Any:
    def trim(x: Any, chars: Any) -> str | bytes | None:
        if x is None or chars is None:
            return None
        # SQLite reads the set of characters as a C string: up to its first NUL.
        text, chars_text = _as_text(x), _as_text(chars).split("\x00", 1)[0]
        if not chars_text or not text:
            return _result(text)
        run = re.compile("[" + "".join(re.escape(c) for c in set(chars_text)) + "]*")
        start = run.match(text).end() if left else 0  # type: ignore[union-attr]
        end = len(text)
        if right and start < end:
            end -= run.match(text[::-1]).end()  # type: ignore[union-attr]
        return _result(text[start:max(start, end)])

    return trim


def install(conn: apsw.Connection, max_value_bytes: int) -> None:
    """Put the stand-ins in place of SQLite's own on `conn` (for its guest SQL, and its
    host SQL, which calls none of them)."""
    # apsw's stubs type a function's arguments as SQLite values: these take Any.
    conn.create_scalar_function("instr", cast(Any, instr), 2, deterministic=True)
    conn.create_scalar_function("replace", _replace_function(max_value_bytes), 3,
                                deterministic=True)
    for name, left, right in (("trim", True, True), ("ltrim", True, False),
                              ("rtrim", False, True)):
        conn.create_scalar_function(name, _trim_function(left, right), 2, deterministic=True)
