"""Who a bearer token is: the admin token, and the named tokens of `--tokens-file`.

Each named token has a role: an `operator` does what the admin token does; a `reader`
sees (listings, statuses, steps, events, queries, the audit log, the metrics, the
console's views) and may not act; an `ingress:CLASS` (a public ingress, issue 47) may
start instances of workflow class CLASS and ask their status, and nothing else: what a
web app needs, without the admin token (operator.py's `ingress_allows`). The admin
token is always an operator named `admin`: one token, as before, stays the default, and
the processes of a server pass requests on to each other with it.

The file, one token a line (`#` begins a comment):

    NAME ROLE SECRET

NAME is 1 to 64 of `a-z 0-9 . _ -`; ROLE is `operator`, `reader` or `ingress:CLASS`;
SECRET is the token itself (16 characters or more), or `sha256:` and the hex of its
SHA-256, so that the file need not hold the secret. Names and secrets are each used once.
Every process (and, in a cluster, every node) reads the same file at its start.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadRequest
from ..storage.paths import check_class

OPERATOR, READER, INGRESS = "operator", "reader", "ingress"
ROLES = (OPERATOR, READER)
ADMIN = "admin"
_NAME = re.compile(r"[a-z0-9._-]{1,64}")
_HASHED = re.compile(r"sha256:([0-9a-f]{64})")
_MIN_SECRET = 16


@dataclass(frozen=True)
class Caller:
    """Who made a request: a token's name and its role (an ingress's: its class too)."""

    name: str
    role: str
    cls: str | None = None  # an ingress's class

    @property
    def acts(self) -> bool:
        """An operator's: it may do anything the admin token does."""
        return self.role == OPERATOR

    @property
    def sees(self) -> bool:
        """An operator's or a reader's: it may read what operators read."""
        return self.role in ROLES


class TokensFileError(ValueError):
    """A line of the tokens file that cannot be read: its place and why, in its message."""


class Tokens:
    """The tokens a server takes: `who(given)` is the caller a bearer token names."""

    def __init__(self, admin: str, named: dict[str, Caller] | None = None) -> None:
        # By their SHA-256: a lookup compares digests, never the secrets themselves.
        self._by_digest = {_digest(admin): Caller(ADMIN, OPERATOR), **(named or {})}

    def who(self, given: str) -> Caller | None:
        digest = _digest(given.strip())
        for known, caller in self._by_digest.items():
            if hmac.compare_digest(digest, known):
                return caller
        return None

    @property
    def names(self) -> list[str]:
        return sorted(c.name for c in self._by_digest.values())


def read_tokens(admin: str, path: Path | None) -> Tokens:
    """The admin token and, if `path` is given, its file's. Raises TokensFileError (the
    file, the line and what is wrong) or OSError."""
    if path is None:
        return Tokens(admin)
    named: dict[str, Caller] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        digest, caller = _parsed(text, f"{path}:{n}")
        if digest in named or hmac.compare_digest(digest, _digest(admin)):
            raise TokensFileError(f"{path}:{n}: this secret is another token's already")
        if caller.name == ADMIN or any(c.name == caller.name for c in named.values()):
            raise TokensFileError(f"{path}:{n}: the name {caller.name!r} is taken")
        named[digest] = caller
    return Tokens(admin, named)


def _parsed(text: str, where: str) -> tuple[str, Caller]:
    parts = text.split()
    if len(parts) != 3:
        raise TokensFileError(f"{where}: a line is NAME ROLE SECRET, not {len(parts)} "
                              "word(s)")
    name, role, secret = parts
    if not _NAME.fullmatch(name):
        raise TokensFileError(f"{where}: the name {name!r} is not 1 to 64 of a-z 0-9 . _ -")
    cls = None
    if role.startswith(INGRESS + ":"):
        role, cls = INGRESS, role.partition(":")[2]
        try:
            check_class(cls)
        except BadRequest as e:
            raise TokensFileError(f"{where}: ingress:CLASS: {e}") from None
    elif role not in ROLES:
        raise TokensFileError(f"{where}: the role is operator, reader or ingress:CLASS, "
                              f"not {role!r}")
    hashed = _HASHED.fullmatch(secret)
    if hashed is not None:
        return hashed.group(1), Caller(name, role, cls)
    if secret.startswith("sha256:"):
        raise TokensFileError(f"{where}: sha256: is followed by 64 lowercase hex digits")
    if len(secret) < _MIN_SECRET:
        raise TokensFileError(f"{where}: a secret has {_MIN_SECRET} characters or more")
    return _digest(secret), Caller(name, role, cls)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
