"""Classes a test answers itself: an actor class whose requests its handler answers
(`Kit.on_call`), and a workflow class whose instances come to the outcome it says
(`Kit.mock_child`: a child's outcome). Each is served as one of the stub apps (stubs/),
which pass what they are asked to the kit by a fetch of STUB_URL: `Stubs` answers it, on
CPython as in the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from wkguest.types import Response

from .guest import Fetch
from .stubs.stub_url import STUB_URL

STUBS = Path(__file__).resolve().parent / "stubs"
STUB_ACTOR, STUB_WORKFLOW = STUBS / "stub_actor.py", STUBS / "stub_workflow.py"
SENDER = "wk-kit-sender"


@dataclass(frozen=True)
class Call:
    """A request to a class the test answers: whom to, its parts, and who sent it
    ("actor CLS/ID", "operator" or "public")."""

    cls: str
    id: str
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    sender: str

    def json(self) -> Any:
        return json.loads(self.body)


CallAnswer = Callable[[Call], Response] | Response
# (id, input) -> {"output": value} or {"error": text}
ChildAnswer = Callable[[str, Any], dict[str, Any]]


class Stubs:
    """The handlers of the stubbed classes, and the fetch that reaches them."""

    def __init__(self) -> None:
        self.calls: dict[str, Callable[[Call], Response]] = {}
        self.children: dict[str, ChildAnswer] = {}

    def answer(self, req: Fetch) -> Response:
        """The answer to a stub app's fetch of STUB_URL/call/... or /child/..."""
        parts = urlsplit(req.url)
        what, cls, id, *rest = parts.path.lstrip("/").split("/", 3)
        cls, id = unquote(cls), unquote(id)
        if what == "child" and cls in self.children:
            return Response.json(self.children[cls](id, json.loads(req.body or b"null")))
        if what == "call" and cls in self.calls:
            headers = [(k, v) for k, v in req.headers if k.lower() != SENDER]
            sender = next((v for k, v in req.headers if k.lower() == SENDER), "")
            return self.calls[cls](Call(cls, id, req.method, "/" + (rest[0] if rest else ""),
                                        parts.query, headers, req.body, sender))
        return Response.text(f"the test kit stubs no {what} of class {cls!r}", status=404)


def call_handler(answer: CallAnswer) -> Callable[[Call], Response]:
    return answer if callable(answer) else (lambda _call: answer)


def child_answer(output: Any, error: str | None,
                 answer: ChildAnswer | None) -> ChildAnswer:
    if answer is not None:
        return answer
    outcome = {"output": output} if error is None else {"error": error}
    return lambda _id, _input: outcome


__all__ = ["STUB_URL", "Call", "Stubs"]
