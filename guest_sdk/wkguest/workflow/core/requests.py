"""A request's fields, as the routes of wk-workflow/v1 read them, and the refusal of a bad
one (`BadRequest`, which the protocol answers with its status and kind)."""

from __future__ import annotations

from typing import Any


class BadRequest(Exception):
    """A refusal of the request: its status, its kind and the message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def int_field(msg: dict[str, Any], key: str, default: int) -> int:
    v = msg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
        raise BadRequest(400, "bad-request", f"{key!r} must be a whole number from 0 to 2**63-1")
    return v


def bool_field(msg: dict[str, Any], key: str) -> bool:
    v = msg.get(key, False)
    if not isinstance(v, bool):
        raise BadRequest(400, "bad-request", f"{key!r} must be true or false")
    return v
