"""Actor ids and class names, and where an actor's database lives.

An id is any string of at most 256 UTF-8 bytes without NUL. It is never used raw as a
file name. The encoding keeps [a-z0-9_-] and escapes every other character, upper case
letters included, as `.XX` hex of its UTF-8 bytes: so the mapping is injective even on a
case-insensitive filesystem, and no encoded id can contain "/" or start with "..". An
encoded id longer than 160 characters is replaced by "=" + the id's sha256 ("=" never
appears in a short encoding, so the two forms cannot collide). Files spread over 256
subdirectories by the first byte of the id's sha256, so no directory grows huge.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..errors import BadRequest

MAX_ID_BYTES = 256
_CLASS_RE = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
_MAX_PLAIN = 160


def check_class(name: str) -> str:
    if not _CLASS_RE.match(name):
        raise BadRequest(
            f"bad class name {name!r}: use 1-63 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter"
        )
    return name


def check_id(actor_id: str) -> str:
    if not actor_id:
        raise BadRequest("an actor id must not be empty")
    if "\x00" in actor_id:
        raise BadRequest("an actor id must not contain NUL")
    try:
        size = len(actor_id.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadRequest("an actor id must be valid Unicode (no lone surrogates)") from None
    if size > MAX_ID_BYTES:
        raise BadRequest(f"an actor id is at most {MAX_ID_BYTES} UTF-8 bytes, got {size}")
    return actor_id


def encode_id(actor_id: str) -> str:
    out = []
    for ch in actor_id:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.append("".join(f".{b:02x}" for b in ch.encode("utf-8")))
    encoded = "".join(out)
    if len(encoded) > _MAX_PLAIN:
        return "=" + hashlib.sha256(actor_id.encode("utf-8")).hexdigest()
    return encoded


def decode_id(encoded: str) -> str | None:
    """The id back from a short encoding; None for a hashed one (read it from the db)."""
    if encoded.startswith("="):
        return None
    raw = bytearray()
    i = 0
    while i < len(encoded):
        if encoded[i] == ".":
            raw.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
        else:
            raw += encoded[i].encode()
            i += 1
    return raw.decode("utf-8")


def db_path(data_dir: Path, cls: str, actor_id: str) -> Path:
    shard = hashlib.sha256(actor_id.encode("utf-8")).hexdigest()[:2]
    return data_dir / "actors" / cls / shard / (encode_id(actor_id) + ".db")


def class_dir(data_dir: Path, cls: str) -> Path:
    return data_dir / "actors" / cls
