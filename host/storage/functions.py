"""Linear-time stand-ins for SQLite's built-in functions whose cost is quadratic.

SQLite's `instr(X, Y)` and `replace(X, Y, Z)` compare Y at every position of X, and
`trim(X, Y)` (with `ltrim` and `rtrim`) looks each character of X up in Y by a scan: a
cost of len(X) * len(Y) in one VM step, which neither the deadline nor the run slot's
hand-off can cut short (host/storage/watch.py). Even with values capped, one such call on
two values of a few MiB runs for hours. These do the same with Python's string search,
which is linear (two-way), and a set of characters, with SQLite's semantics: NULL in,
NULL out; a pattern or a set of characters read up to its first NUL; two BLOBs compared
as bytes in `instr`; anything else as text, converted the way SQLite converts it.

Each is also bounded in how long it holds the GIL and runs past its statement's deadline
(docs/guarantees.md, "Host work over guest data"): what walks a guest's value
character by character in Python (trimming, building the set of characters to trim)
does so in chunks of `CHUNK` characters, each one C call or a stretch of bytecode that
gives the GIL up on the interpreter's switch interval, and it looks at the connection's
interrupt between chunks. The watch interrupts a statement at its event's deadline
(storage/watch.py), and SQLite itself would see that only once the function returned.
The rest (a search, a count, a replace, a conversion) is one linear pass in C over at
most the value cap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
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


# How many characters a stand-in walks between looks at its statement's interrupt: one
# chunk is a short stretch of work, whatever the value's size.
CHUNK = 1 << 16


def _check(conn: apsw.Connection) -> None:
    """Stop here if the statement was interrupted (its deadline: storage/watch.py)."""
    if conn.is_interrupted:
        raise apsw.InterruptError("interrupted")


def _char_set(chars: str, conn: apsw.Connection) -> set[str]:
    """The characters of `chars`, as a set made a chunk at a time: a set of millions of
    characters is one C call of as many hashes otherwise, all under the GIL."""
    members: set[str] = set()
    for at in range(0, len(chars), CHUNK):
        _check(conn)
        members.update(chars[at:at + CHUNK])
    return members


def _run_length(text: str, members: set[str], conn: apsw.Connection, from_end: bool) -> int:
    """How many characters of `text`, from its start (or its end), are in `members`,
    taken a chunk at a time. A few members: `str.strip`, in C, which scans them for each
    character; more: one set look-up each (a regex class, or `str.strip`, would scan
    them all for each character: len(X) * len(Y))."""
    n, run = len(text), 0
    strip_len = _strip_len(members, from_end)
    while run < n:
        _check(conn)
        chunk = text[max(0, n - run - CHUNK):n - run] if from_end else text[run:run + CHUNK]
        got = strip_len(chunk)
        run += got
        if got < len(chunk):
            break
    return run


# Up to this many members, `str.strip`'s scan of them for each character costs less than
# a set look-up from Python.
FEW = 16


def _strip_len(members: set[str], from_end: bool) -> Callable[[str], int]:
    """How many characters of a chunk, from its start (or its end), are in `members`."""
    if len(members) <= FEW:
        chars = "".join(members)
        if from_end:
            return lambda chunk: len(chunk) - len(chunk.rstrip(chars))
        return lambda chunk: len(chunk) - len(chunk.lstrip(chars))

    def by_set(chunk: str) -> int:
        for i, c in enumerate(reversed(chunk) if from_end else chunk):
            if c not in members:
                return i
        return len(chunk)

    return by_set


def _trim_function(left: bool, right: bool, conn: apsw.Connection) -> Any:
    def trim(x: Any, chars: Any) -> str | bytes | None:
        if x is None or chars is None:
            return None
        # SQLite reads the set of characters as a C string: up to its first NUL.
        text, chars_text = _as_text(x), _as_text(chars).split("\x00", 1)[0]
        if not chars_text or not text:
            return _result(text)
        members = _char_set(chars_text, conn)
        start = _run_length(text, members, conn, False) if left else 0
        end = len(text)
        if right and start < end:
            end -= _run_length(text, members, conn, True)
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
        conn.create_scalar_function(name, _trim_function(left, right, conn), 2,
                                    deterministic=True)
