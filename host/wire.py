"""Conversions between host values and the WIT records of the `types` interface."""

from __future__ import annotations

from typing import Any

from wasmtime.component import Record, Variant

from .errors import GuestFailed
from .types import Request, Response, Sender

_SENDER_PUBLIC = Variant("public")
_SENDER_OPERATOR = Variant("operator")


def request_record(req: Request) -> Record:
    r = Record()
    r.method = req.method
    r.path = req.path
    r.query = req.query
    r.headers = [(k.lower(), v) for k, v in req.headers]
    r.body = req.body.decode("latin-1")
    return r


def sender_variant(sender: Sender) -> Variant:
    if sender.kind == "public":
        return _SENDER_PUBLIC
    if sender.kind == "operator":
        return _SENDER_OPERATOR
    assert sender.actor is not None
    ref = Record()
    setattr(ref, "class", sender.actor.cls)
    ref.id = sender.actor.id
    return Variant("actor", ref)


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
