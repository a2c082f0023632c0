"""Each failed attempt's traceback: `_wk_wf_attempt_traceback`, beside its history row
(attempt_history.py).

    pos, idx, attempt   the attempt's, as its `_wk_wf_attempt` row has them
    traceback           the exception's traceback as Python formats it, from the first
                        frame of the workflow's own code (the runner's frames above it
                        left out), chained exceptions with it; its last MAX_CHARS
                        characters, where the frame that raised and the exception are

Only an attempt that raised writes one (failed, or timed out on an exception), in the
same call as its history row and its step's record; and so does a step's attempt cut by
a trap on an exception the guest reported (`lifecycle.report-exception`: SystemExit, a
BaseException, MemoryError), with the traceback the host kept, as the cut is noted
(cuts.py; a group's branches keep only the reason: which one raised is not known). A
returned attempt writes and reads nothing here. The first that needs the table makes it,
in that same call, so an instance none of whose steps ever failed has none, and no
existing table changed (format version 7, docs/storage-format.md: an older runner
ignores it). Its trigger forgets a position's
tracebacks with its journal entry, as the history's does.
"""

from __future__ import annotations

import os
from types import TracebackType

from ..backend import Param
from .store import Store

TABLE = "_wk_wf_attempt_traceback"
MAX_CHARS = 8192  # kept per attempt
MAX_PAGE_CHARS = 256 * 1024  # shown in one answer of the steps route, all attempts together

_MAKE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (pos INTEGER NOT NULL, idx INTEGER NOT NULL,"
         " attempt INTEGER NOT NULL, traceback TEXT NOT NULL,"
         " PRIMARY KEY (pos, idx, attempt)) WITHOUT ROWID",
         f"CREATE TRIGGER IF NOT EXISTS {TABLE}_forget AFTER DELETE ON _wk_wf_step"
         f" BEGIN DELETE FROM {TABLE} WHERE pos = OLD.pos; END")
_PUT = (f"/*wk:attempt-traceback*/ INSERT OR REPLACE INTO {TABLE} (pos, idx, attempt,"
        " traceback) VALUES (?, ?, ?, ?)")
# The latest first, until ?3 characters: what one answer shows.
_GET = ("SELECT pos, idx, attempt, traceback FROM (SELECT *, sum(length(traceback)) OVER"
        " (ORDER BY pos DESC, idx DESC, attempt DESC) AS upto"
        f" FROM {TABLE} WHERE pos BETWEEN ?1 AND ?2) WHERE upto <= ?3")

# The runner's own files: the frames a step's traceback starts with, left out.
_SDK_DIR = os.path.dirname(os.path.dirname(os.path.dirname(__file__))) + os.sep


def of(e: BaseException) -> str:
    """`e`'s traceback from the workflow's own first frame, chained exceptions first as
    Python prints them, its last MAX_CHARS characters. Where every frame is the
    runner's (its own error), all of them.

    Formatted here, not by `traceback.format_exception`: that one looks each frame's
    source line up (a file read per frame, none found in a component) and costs a failed
    attempt several times what the attempt itself burns; this costs a fraction."""
    text = "".join(_chain(e, set()))
    return text if len(text) <= MAX_CHARS else "…" + text[len(text) - MAX_CHARS + 1:]


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"
MAX_FRAMES = 100  # of one exception: a deep recursion keeps its innermost


def _chain(e: BaseException, seen: set[int]) -> list[str]:
    seen.add(id(e))
    out: list[str] = []
    cause, context = e.__cause__, e.__context__
    if cause is not None and id(cause) not in seen:
        out += [*_chain(cause, seen), _CAUSE]
    elif context is not None and not e.__suppress_context__ and id(context) not in seen:
        out += [*_chain(context, seen), _CONTEXT]
    frames = _frames(_users(e.__traceback__))
    if frames:
        out += ["Traceback (most recent call last):\n", *frames]
    return [*out, _exception_line(e)]


def _exception_line(e: BaseException) -> str:
    """The exception's line as Python's traceback ends with it: "module.Type: message"
    (a builtin's type bare), then its notes."""
    t = type(e)
    name = t.__qualname__ if t.__module__ in ("builtins", "__main__") \
        else f"{t.__module__}.{t.__qualname__}"
    try:
        said = str(e)
    except Exception:  # noqa: BLE001 (a broken __str__: Python prints the same)
        said = "<exception str() failed>"
    notes = getattr(e, "__notes__", None)
    tail = "".join(f"{n}\n" for n in notes) if isinstance(notes, list) else ""
    return (f"{name}: {said}\n" if said else f"{name}\n") + tail


def _users(tb: TracebackType | None) -> TracebackType | None:
    first = tb
    while first is not None and _is_sdk(first.tb_frame.f_code.co_filename):
        first = first.tb_next
    return first if first is not None else tb


def _is_sdk(filename: str) -> bool:
    return filename.startswith(_SDK_DIR)


def _frames(tb: TracebackType | None) -> list[str]:
    lines = []
    while tb is not None:
        code = tb.tb_frame.f_code
        lines.append(f'  File "{code.co_filename}", line {tb.tb_lineno}, in {code.co_name}\n')
        tb = tb.tb_next
    if len(lines) > MAX_FRAMES:
        left_out = len(lines) - MAX_FRAMES
        lines = [f"  [{left_out} outer frames left out]\n", *lines[-MAX_FRAMES:]]
    return lines


def writes(pos: int, idx: int, attempt: int, text: str) -> list[tuple[str, tuple[Param, ...]]]:
    """The writes of attempt `attempt`'s traceback (the table made if it is not there),
    to run with its history row."""
    return [(_MAKE[0], ()), (_MAKE[1], ()), (_PUT, (pos, idx, attempt, text))]


def cut_writes(pos: int, pending: str, text: str) -> list[tuple[str, tuple[Param, ...]]]:
    """The writes of the traceback the guest reported as it trapped (the host's
    `last-trap-info`), for the pending attempt of the step at `pos` that the trap cut
    (`pending`: its row's kind), its last MAX_CHARS characters."""
    text = _users_text(text)
    kept = text if len(text) <= MAX_CHARS else "…" + text[len(text) - MAX_CHARS + 1:]
    put = (f"/*wk:attempt-traceback*/ INSERT OR IGNORE INTO {TABLE} (pos, idx, attempt,"
           " traceback) SELECT pos, -1, attempts, ? FROM _wk_wf_step"
           " WHERE pos = ? AND kind = ?")
    return [(_MAKE[0], ()), (_MAKE[1], ()), (put, (kept, pos, pending))]


_HEAD = "Traceback (most recent call last):\n"


def _users_text(text: str) -> str:
    """A traceback as Python formatted it, its last one's frames from the first of the
    workflow's own code that no runner frame follows (as `_users` leaves a traceback
    object): the step's function and what it called, not the runner around it."""
    head, found, last = text.rpartition(_HEAD)
    if not found:
        return text
    lines = last.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    sdk = [i for i in starts if _is_sdk(lines[i][len('  File "'):])]
    if not sdk or sdk[-1] == starts[-1]:  # none, or it raised in the runner: all of it
        return text
    first = starts[starts.index(sdk[-1]) + 1]
    return head + _HEAD + "".join(lines[first:])


def read(store: Store, first: int, last: int) -> dict[tuple[int, int, int], str]:
    """The tracebacks of positions `first` to `last`, by (pos, idx, attempt): the latest
    first, as many as MAX_PAGE_CHARS hold (an answer's worth); older ones are left out."""
    rows = store.rows(_GET, (first, last, MAX_PAGE_CHARS))
    return {(int(r[0]), int(r[1]), int(r[2])): str(r[3]) for r in rows}
