"""Exceptions of the guest SDK (plain CPython, no bindings).

    WkError                 base of everything the SDK raises for a host `result` error
    ├── SqliteError         sqlite.exec / exec_durable / query failed (SQL error, denial, cap);
    │                       `.kind` (sql, deadline, narrowed-deadline, storage)
    ├── AlarmError          alarm.set / alarm.clear failed
    ├── CallError           actors.call failed; `.reason` is the host's one-line reason,
    │                       `.kind` why (unknown-class, not-declared, refused, ...)
    ├── FetchError          http.fetch failed; `.kind` (denied, timeout, narrowed-deadline,
    │                       too-large, incomplete, connect, invalid) and `.message`
    ├── ReadOnlyError       a change asked for while code that may only read runs
    │                       (`wkguest.readonly`: a workflow's query handler)
    └── InitError           raise it from `Actor.on_init` to refuse creation cleanly

Code tells failures apart by `.kind`, which the host gives beside the text (WIT
`sqlite.last-error`, `actors.last-error`, `http.last-error`); the text is for people.

A guest that lets a WkError escape from `handle` traps like any other exception (the
caller gets 500); catch the ones you expect. Misuse of the SDK itself (a wrong argument
type) raises the usual TypeError/ValueError, not a WkError.
"""

from __future__ import annotations

from typing import Literal, cast, get_args

# WIT `http.fetch-error-kind`: a fetch's failure. Its text begins with the kind, but for
# a fetch cut at the narrowed deadline, whose text begins "timeout: " as it did before
# the kind was given beside it.
FetchKind = Literal["denied", "timeout", "narrowed-deadline", "too-large", "incomplete",
                    "connect", "invalid"]
FETCH_KINDS: frozenset[str] = frozenset(get_args(FetchKind))
_WORD = {"narrowed-deadline": "timeout"}  # a kind's first word in the text, if not its own
_WORDS = FETCH_KINDS - _WORD.keys()

# WIT `sqlite.sql-error-kind`: a statement's failure ("read-only" is a ReadOnlyError).
SqlErrorKind = Literal["sql", "read-only", "deadline", "narrowed-deadline", "storage"]
# WIT `actors.call-error-kind`: a call's failure.
CallErrorKind = Literal["unknown-class", "not-declared", "invalid", "refused", "too-large",
                        "deadline", "narrowed-deadline", "callee-trapped", "callee-budget",
                        "callee-lost", "storage", "other"]


class WkError(Exception):
    """Base of every SDK exception; `str(e)` is the host's one-line message."""

    @property
    def message(self) -> str:
        return str(self)


class SqliteError(WkError):
    """A statement failed: SQL error, authorizer denial, size cap, busy database (kind
    "sql"); cut at the event's deadline ("deadline") or at the one it set itself
    ("narrowed-deadline"); the database failed around it ("storage")."""

    def __init__(self, reason: str, kind: SqlErrorKind = "sql") -> None:
        super().__init__(reason)
        self.kind: SqlErrorKind = kind


class AlarmError(WkError):
    """Setting or clearing the alarm failed."""


class CallError(WkError):
    """An actor call failed: unknown class, refused (re-entry, cycle, depth, backpressure),
    the callee trapped or ran out of budget, or the deadline passed; `kind` says which
    (WIT `actors.call-error-kind`)."""

    def __init__(self, reason: str, kind: CallErrorKind = "other") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind: CallErrorKind = kind


class FetchError(WkError):
    """An outgoing HTTP request failed: `kind` says why (WIT `http.fetch-error-kind`),
    `message` is the host's reason after its first word."""

    def __init__(self, kind: FetchKind, message: str) -> None:
        super().__init__(f"{_WORD.get(kind, kind)}: {message}")
        self.kind: FetchKind = kind
        self._message = message

    @property
    def message(self) -> str:
        return self._message

    @classmethod
    def from_reason(cls, reason: str, kind: FetchKind | None = None) -> FetchError:
        """The error for the host's "word: message" string, of `kind` (the host's, given
        beside it), else of the kind its word names; a reason without a known first word
        is kind "invalid" and keeps its text. The text is the one the word gives, as it
        was before the host gave kinds, whatever `kind` is. Never raises."""
        head, sep, rest = reason.partition(":")
        word = head.strip()
        if not (sep and word in _WORDS):
            word, rest = "invalid", reason
        e = cls(cast(FetchKind, word), rest.strip())
        if kind is not None:
            e.kind = kind
        return e


class ReadOnlyError(WkError):
    """Refused: the code running may only read (`wkguest.readonly.read_only`), and this
    would change something: a SQL write, the alarm, a fetch, a call to another actor,
    publishing, deleting the actor."""


class InitError(WkError):
    """Raised by `Actor.on_init` to say "not created": the event's `on-init` returns this
    message as its error, nothing is kept, and the next event tries again."""
