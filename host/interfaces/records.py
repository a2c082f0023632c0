"""Conversions between host values and the WIT records of the `types` interface: a
request, its sender and a response, as the guest's exports take and give them."""

from __future__ import annotations

from typing import Any

from wasmtime.component import Record, Variant

from ..errors import GuestFailed
from ..types import Request, Response, Sender


def record(**fields: Any) -> Any:
    """A WIT record value. wasmtime-py reads fields by their WIT names, so kebab-case
    ones come in as `**{"last-insert-rowid": n}`."""
    r = Record()
    for name, value in fields.items():
        setattr(r, name, value)
    return r


_SENDER_PUBLIC = Variant("public")
_SENDER_OPERATOR = Variant("operator")


def request_record(req: Request) -> Any:
    return record(method=req.method, path=req.path, query=req.query,
                  headers=[(k.lower(), v) for k, v in req.headers],
                  body=req.body.decode("latin-1"))


def sender_variant(sender: Sender) -> Variant:
    if sender.kind == "public":
        return _SENDER_PUBLIC
    if sender.kind == "operator":
        return _SENDER_OPERATOR
    assert sender.actor is not None
    return Variant("actor", record(**{"class": sender.actor.cls, "id": sender.actor.id}))


def response_from_record(r: Any, max_body: int) -> Response:
    try:
        body = r.body.encode("latin-1")
    except UnicodeEncodeError:
        raise GuestFailed("the guest's response body is not bytes-as-Latin-1 "
                          "(return bytes through wkguest's Response)") from None
    if len(body) > max_body:
        raise GuestFailed(f"the guest's response body ({len(body)} bytes) is over the "
                          f"{max_body}-byte cap")
    return Response(r.status, list(r.headers), body)
