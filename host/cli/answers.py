"""The operators' client's reading of what the front door answers (client.py): a runner's
CBOR map, a content type, a body's text for an error, and the protocol's wait."""

from __future__ import annotations

import io
from typing import Any

import cbor2

from ..events.holds import MAX_HOLD_MS


def wait_ms(seconds: float) -> dict[str, int]:
    """The protocol's wait_ms, within what the host holds an answer for."""
    if seconds < 0:
        raise ValueError("wait must be 0 or more seconds")
    return {"wait_ms": min(MAX_HOLD_MS, round(seconds * 1000))} if seconds else {}


def decode_answer(body: bytes) -> Any:
    """A runner's answer: one CBOR map and nothing after it, else None. (cbor2.loads
    would take the first item of any text, say a host's plain-text error, and stop.)"""
    fp = io.BytesIO(body)
    try:
        doc = cbor2.CBORDecoder(fp).decode()
    except (cbor2.CBORDecodeError, ValueError, EOFError):
        return None
    return doc if isinstance(doc, dict) and fp.tell() == len(body) else None


def content_type(value: str) -> str:
    return value.split(";")[0].strip()


def text_of(body: bytes) -> str:
    return body[:500].decode("utf-8", "replace").strip()
