"""The values a guest handles: who is calling, the request, the response (plain CPython).

These mirror the WIT `types` interface with Python-friendly shapes: bodies are `bytes`
(not the wire string), `class` is `cls`, and the sender is one small dataclass instead of
a variant. `wkguest.actor` converts to and from the generated bindings.
"""

from __future__ import annotations

import builtins
import json as _json
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs

SenderKind = Literal["public", "actor", "operator"]


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    wanted = name.lower()  # the host lower-cases names, but a guest-built list may not
    for k, v in headers:
        if k.lower() == wanted:
            return v
    return None


@dataclass(frozen=True)
class ActorRef:
    """One actor: its class name and id."""

    cls: str
    id: str

    def __str__(self) -> str:
        return f"{self.cls}/{self.id}"


@dataclass(frozen=True)
class Sender:
    """Who sent a request; set by the host only, so it can be trusted."""

    kind: SenderKind
    actor: ActorRef | None = None

    @property
    def is_public(self) -> bool:
        return self.kind == "public"

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    @property
    def is_actor(self) -> bool:
        return self.kind == "actor"


PUBLIC = Sender("public")


@dataclass
class Request:
    """A request to this actor. `path` is what follows /{class}/{id}; `query` is raw."""

    method: str = "GET"
    path: str = "/"
    query: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    sender: Sender = PUBLIC

    def header(self, name: str) -> str | None:
        """The first header called `name` (any case), or None."""
        return _header(self.headers, name)

    def arg(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter `name`, or `default`."""
        values = parse_qs(self.query, keep_blank_values=True).get(name)
        return values[0] if values else default

    def text(self) -> str:
        """The body as UTF-8. Raises UnicodeDecodeError if it is not."""
        return self.body.decode("utf-8")

    def json(self) -> Any:
        """The body parsed as JSON. Raises ValueError (json.JSONDecodeError) if it is not."""
        return _json.loads(self.body)


@dataclass
class Response:
    """A response from `handle` (or from another actor through `actors.call`)."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: builtins.bytes = b""  # `bytes` is shadowed by the classmethod below

    def header(self, name: str) -> str | None:
        """The first header called `name` (any case), or None."""
        return _header(self.headers, name)

    @classmethod
    def text(cls, s: str, status: int = 200) -> Response:
        """A text/plain UTF-8 response. Never raises."""
        return cls(status, [("content-type", "text/plain; charset=utf-8")], s.encode())

    @classmethod
    def json(cls, obj: Any, status: int = 200) -> Response:
        """An application/json response. Raises TypeError if `obj` is not JSON-able."""
        body = _json.dumps(obj, separators=(",", ":")).encode()
        return cls(status, [("content-type", "application/json")], body)

    @classmethod
    def bytes(
        cls,
        b: builtins.bytes | bytearray | memoryview,
        status: int = 200,
        content_type: str = "application/octet-stream",
    ) -> Response:
        """A binary response. Never raises."""
        return cls(status, [("content-type", content_type)], builtins.bytes(b))


@dataclass
class HttpResponse:
    """The answer to `wkguest.http.fetch` (every status, 4xx/5xx included)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first header called `name` (any case), or None."""
        return _header(self.headers, name)

    def text(self) -> str:
        """The body as UTF-8. Raises UnicodeDecodeError if it is not."""
        return self.body.decode("utf-8")

    def json(self) -> Any:
        """The body parsed as JSON. Raises ValueError (json.JSONDecodeError) if it is not."""
        return _json.loads(self.body)
