"""FetchError, the one exception `fetch` raises, and how its messages name a cause."""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal["denied", "timeout", "too-large", "incomplete", "connect", "invalid"]

_MAX_MESSAGE = 400


class FetchError(Exception):
    """A fetch that produced no response. `str(e)` is the one line "KIND: message"."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        self.kind: ErrorKind = kind
        self.message = _one_line(message)
        super().__init__(f"{kind}: {self.message}")


def describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def os_reason(exc: OSError) -> str:
    return exc.strerror or describe(exc)


def clip(text: str) -> str:
    return text if len(text) <= 100 else text[:100] + "..."


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 3] + "..."
