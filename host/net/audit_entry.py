"""What an operator's request and its answer say, as one row of the audit log.

Generic by route, so that a new action is recorded without a change here:
- A request is an action unless it only reads: GET, HEAD and OPTIONS read (HTTP's safe
  methods), and so do the routes of an actor protocol (`/wk-<name>/v<N>/<route>`) named
  in READ_ROUTES, which take POST too (wk-workflow/v1's status, steps, query...). The
  host's own `/_wk/audit...` routes are the log's: never recorded by the middleware.
- Its action is the protocol route's name (start, event, cancel, terminate...), "call"
  for any other request to an actor (`wkhost call`), or the path after `/_wk/` for the
  host's own routes (clock/advance).
- The answer's one-line result: a refusal's "kind: message" (a 4xx or 5xx protocol map,
  CBOR or JSON) or its text's first line; for a map, its top-level booleans ("created",
  "input_differs=false"), or a small map's fields ("events_pending=1"), else "ok"; else
  its size. The state after is the map's "state".
- The request's detail: its body's top-level plain fields (numbers, booleans, strings of
  up to 80 characters, cut beyond); a nested value shows only as its type, so inputs and
  payloads are not copied into the log whole.

All of this runs on the audit log's thread (host/storage/audit_log.py), not the loop.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple
from urllib.parse import unquote

import cbor2

from ..storage.audit_log import Entry

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ROUTES = frozenset({"status", "summary", "steps", "attempts", "events", "query",
                         "describe", "list"})
_PROTOCOL_ROUTE = re.compile(r"^/wk-[a-z0-9-]+/v[0-9]+/([^/?]+)$")
_RESULT_CHARS = 200
_FIELD_CHARS = 80
DESCRIBED_BYTES = 1 << 16  # an answer or request bigger than this is shown by its size


class Answered(NamedTuple):
    """What the middleware keeps of a request and its answer (bodies over
    DESCRIBED_BYTES are None, with their size). A tuple: made on the loop, for each
    action, for much less than a frozen dataclass costs (docs/performance.md)."""

    at: int
    took_ms: int
    process: int
    method: str
    raw_path: str
    status: int
    content_type: str
    body: bytes | None
    body_size: int
    request_type: str
    request_body: bytes | None
    note: str | None
    who: str  # the name of the token it came with (net/tokens.py)


def is_protocol_read(raw_path: str) -> bool:
    """Whether the request is one of an actor's protocol read routes (a status, steps,
    a query...): what a reader's token may ask an actor (net/tokens.py)."""
    parts = raw_path.split("?", 1)[0].split("/", 3)
    m = _PROTOCOL_ROUTE.match("/" + parts[3]) if len(parts) > 3 else None
    return m is not None and m.group(1) in READ_ROUTES


def is_action(method: str, raw_path: str) -> bool:
    if method in READ_METHODS or raw_path.startswith("/_wk/audit"):
        return False
    if raw_path.startswith("/_wk/"):
        return True
    parts = raw_path.split("?", 1)[0].split("/", 3)
    rest = "/" + parts[3] if len(parts) > 3 else "/"
    m = _PROTOCOL_ROUTE.match(rest)
    return m is None or m.group(1) not in READ_ROUTES


def describe(a: Answered) -> Entry:
    cls, actor_id, path, action = _target(a.raw_path)
    answer = _decoded(a.content_type, a.body)
    result, state = _result(a, answer)
    note = a.note[:500] if a.note else None
    return Entry(at=a.at, took_ms=a.took_ms, process=a.process, action=action,
                 method=a.method, cls=cls, actor_id=actor_id, path=path, status=a.status,
                 result=result, state=state, note=note, detail=_detail(a), who=a.who)


def _target(raw_path: str) -> tuple[str, str, str, str]:
    """(class, id, the path under them with its query, the action)."""
    raw, sep, query = raw_path.partition("?")
    if raw.startswith("/_wk/"):
        return "", "", raw_path, raw.removeprefix("/_wk/")
    parts = raw.split("/", 3)
    cls = parts[1] if len(parts) > 1 else ""
    actor_id = unquote(parts[2], errors="replace") if len(parts) > 2 else ""
    rest = "/" + unquote(parts[3], errors="replace") if len(parts) > 3 else "/"
    m = _PROTOCOL_ROUTE.match(rest)
    return cls, actor_id, rest + sep + query, m.group(1) if m else "call"


def _decoded(content_type: str, body: bytes | None) -> Any:
    """The body as a value if it is CBOR or JSON, its text if text, else None."""
    if body is None:
        return None
    kind = content_type.split(";", 1)[0].strip().lower()
    try:
        if kind == "application/cbor":
            return cbor2.loads(body)
        if kind == "application/json":
            return json.loads(body)
        if kind.startswith("text/"):
            return body.decode(errors="replace")
    except (ValueError, cbor2.CBORDecodeError):
        return None
    return None


def _result(a: Answered, answer: Any) -> tuple[str, str | None]:
    state = answer.get("state") if isinstance(answer, dict) else None
    state = state if isinstance(state, str) else None
    if isinstance(answer, dict) and a.status >= 400 and "error" in answer:
        text = f"{answer['error']}: {answer.get('message', '')}"
    elif isinstance(answer, dict):
        text = _flags(answer) or "ok"
    elif isinstance(answer, str) and answer.strip():
        text = answer.strip().splitlines()[0]
    else:
        text = "ok" if a.body_size == 0 and a.status < 400 else f"{a.body_size} bytes"
    return _one_line(text, _RESULT_CHARS), state


def _flags(answer: dict[Any, Any]) -> str:
    """A map's booleans ("created", "input_differs=false"); a small map without any,
    its plain fields ("events_pending=1")."""
    flags = [k if v else f"{k}=false" for k, v in answer.items()
             if isinstance(k, str) and isinstance(v, bool)]
    if not flags and len(answer) <= 2:
        flags = [f"{k}={_plain(v)}" for k, v in answer.items() if k != "state"]
    return ", ".join(flags)


def _detail(a: Answered) -> str | None:
    body = _decoded(a.request_type or "application/cbor", a.request_body)
    if not isinstance(body, dict):
        return None
    out = {str(k): _plain(v) for k, v in body.items()}
    return json.dumps(out) if out else None


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str):
        return _one_line(v, _FIELD_CHARS)
    return f"<{type(v).__name__}>"


def _one_line(text: str, most: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= most else line[:most - 1] + "…"
