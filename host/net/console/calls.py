"""The console's calls into an actor as the operator: wk-workflow/v1 (CBOR) into a
workflow instance, wk-schedule/v1 (JSON) into a schedule.

Who serves the instance is asked once (host/placement.py). One of this process is asked
as the front door asks it (`host.submit`, with Sender.operator()); one served elsewhere
(another process of `--processes N`, or another node) through the front door's one
forwarder (net/forward.py), with the admin token, as a client's request passed on. The
request names the protocol (`wk-protocol`), so a class that does not declare it runs
none of its code.
The answer's CBOR is made fit for JSON (`plain`).
"""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any, NamedTuple
from urllib.parse import quote

import cbor2
from aiohttp import web

from ...core.host import Host
from ...errors import HostError
from ...types import Request, Sender
from .. import forward

PROTOCOL = "wk-workflow/v1"
CBOR = "application/cbor"
JSON = "application/json"


class Protocol(NamedTuple):
    """A protocol the console speaks: its name (the path's and the `wk-protocol`
    header's, when the class declares it) and its body's content type."""

    name: str
    content_type: str
    declared: bool  # its classes declare it: the request names it

    def headers(self) -> list[tuple[str, str]]:
        named = [("wk-protocol", self.name)] if self.declared else []
        return [("content-type", self.content_type), *named]

    def encode(self, msg: dict[str, Any]) -> bytes:
        if self.content_type == CBOR:
            return cbor2.dumps(msg, canonical=True)
        return json.dumps(msg).encode()


WORKFLOW = Protocol(PROTOCOL, CBOR, True)
SCHEDULE = Protocol("wk-schedule/v1", JSON, False)  # the schedule class declares none
# The largest answer the console decodes. It decodes on the event loop, which serves
# every other request meanwhile, and an answer's size is the guest's to choose (up to
# its memory): past this it is shown by its size (docs/guarantees.md, "Host work over
# guest data").
DECODED_MAX = 16 << 20


class Answer(NamedTuple):
    status: int
    doc: Any  # the CBOR map, as plain JSON values; or the text of a refusal
    body: bytes  # as it came, for the audit log
    content_type: str


def target(cls: str, actor_id: str, route: str, protocol: Protocol = WORKFLOW) -> str:
    """The front door's path of the route, as a client would send it."""
    return f"/{quote(cls, safe='')}/{quote(actor_id, safe='')}/{protocol.name}/{route}"


async def call(app: web.Application, cls: str, actor_id: str, route: str,
               msg: dict[str, Any], protocol: Protocol = WORKFLOW) -> Answer:
    """The actor's answer to `route` of `protocol` with `msg`; a refusal by the host (an
    unknown class, a bad id, overload, a process gone) as its status and reason."""
    host: Host = app["host"]
    body = protocol.encode(msg)
    try:
        ref = host.actor_ref(cls, actor_id)
        where = host.placement.where(ref.id)  # asked once, passed on
        if not where.here:
            headers = [*protocol.headers(), ("authorization", f"Bearer {app['token']}")]
            got = await forward.exchange(app, ref, where, "POST",
                                         target(cls, actor_id, route, protocol), headers,
                                         body)
            if got is not None:
                return _answer(*got)
        req = Request("POST", f"/{protocol.name}/{route}", "", protocol.headers(), body)
        resp = await asyncio.wrap_future(host.submit(host.request, ref, req,
                                                     Sender.operator()))
    except HostError as e:  # PeerUnavailable and PeerLost too
        return Answer(e.http_status, e.reason, e.reason.encode(), "text/plain")
    ctype = dict(resp.headers).get("content-type", "")
    return Answer(resp.status, decoded(ctype, resp.body), resp.body, ctype)


def _answer(status: int, got: list[tuple[str, str]], data: bytes) -> Answer:
    """The answer of the process (or node) the call was passed to, as it came."""
    ctype = {k.lower(): v for k, v in got}.get("content-type", "")
    return Answer(status, decoded(ctype, data), data, ctype)


def decoded(content_type: str, body: bytes) -> Any:
    """A CBOR answer as plain values (one map, nothing after it), a JSON one as its
    value, else its text; one over DECODED_MAX, as its size."""
    if len(body) > DECODED_MAX:
        return f"an answer of {len(body)} bytes, over the console's cap of {DECODED_MAX}"
    if content_type.split(";")[0].strip() == JSON:
        try:
            return json.loads(body)
        except ValueError:
            pass
    if content_type.split(";")[0].strip() == CBOR:
        fp = io.BytesIO(body)
        try:
            doc = cbor2.CBORDecoder(fp).decode()
        except (cbor2.CBORDecodeError, ValueError, EOFError):
            doc = None
        if doc is not None and fp.tell() == len(body):
            return plain(doc)
    return body[:2000].decode("utf-8", "replace").strip()


def plain(v: Any) -> Any:
    """`v` with only what JSON holds: bytes as {"bytes": hex}, anything else odd as text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {k if isinstance(k, str) else str(plain(k)): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": bytes(v).hex()}
    return repr(v)


def error_of(a: Answer) -> str | None:
    """A refusal's one line ("kind: message"), or None for an answer that is not one."""
    if a.status < 400:
        return None
    if isinstance(a.doc, dict) and "error" in a.doc:
        return f"{a.doc['error']}: {a.doc.get('message', '')}"
    return str(a.doc) or f"status {a.status}"
