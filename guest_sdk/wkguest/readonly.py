"""`read_only`: while code that may only read runs, every change is refused.

    with readonly.read_only("query 'progress'"):
        answer = handler(arg)

Inside the block, each interface module of the SDK refuses what would change anything,
with a ReadOnlyError naming the rule and the code: a fetch (`http`), a call to another
actor (`actors`), setting or clearing the alarm (`alarm`), publishing (`attributes`),
deleting the actor (`lifecycle`). SQL cannot be judged by its text alone (a WITH may
lead to an INSERT), so entering the block also marks the event read-only on the host
(WIT `lifecycle.read-only`): SQLite then refuses each statement that would change the
database, and the host refuses alarm changes and publishing, also to code that calls
the bindings itself.

The host's mark lasts until the event ends: nothing the guest calls can lift it. So the
block suits code after which the event changes nothing (a workflow's query handler, a
dry replay); code that must write after it in the same event (an update's validator)
needs a mark it can lift, which the WIT does not offer.

Plain Python: on CPython, which has no bindings (the workflow runner's unit tests), the
SDK's part works alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from wkguest.errors import ReadOnlyError, SqlErrorKind, SqliteError, WkError

__all__ = ["read_only", "refuse", "sql_error"]

_what: str | None = None  # the code that may only read, while it runs


@contextlib.contextmanager
def read_only(what: str) -> Iterator[None]:
    """While the block runs, refuse every change, naming `what` (e.g. "query
    'progress'"); the host refuses changes to the actor's data until the event ends.
    A block inside another keeps the outer one's name."""
    global _what
    outer = _what
    if outer is None:
        _mark_host()
        _what = what
    try:
        yield
    finally:
        _what = outer


def refuse(change: str) -> None:
    """Raise ReadOnlyError if code that may only read is running; `change` says what it
    asked for ("an HTTP fetch")."""
    if _what is not None:
        raise ReadOnlyError(f"read-only: {_what} may only read, so {change} is refused")


def sql_error(reason: str, kind: SqlErrorKind) -> WkError:
    """The error for the host's `reason` a statement failed, of the `kind` the host gave
    beside it (WIT `sqlite.last-error`): ReadOnlyError if the host refused it as a
    change in a read-only event, else SqliteError of that kind."""
    if kind != "read-only":
        return SqliteError(reason, kind)
    if _what is None:
        return ReadOnlyError(reason)
    return ReadOnlyError(f"read-only: {_what} may only read, so a statement that would "
                         f"change the database is refused ({reason})")


def _mark_host() -> None:
    try:
        # In a component, imported with the app already (wkguest/actor.py imports every
        # bindings module), so found at run time too.
        from wkguest import _bindings
    except ModuleNotFoundError:  # plain CPython: there is no host to mark
        return
    _bindings.lifecycle.read_only()
