"""The checks an answer passes before a client gets it (`answer_headers`), and the headers
that belong to one connection, not to a message."""

from __future__ import annotations

import re

from .errors import GuestFailed

# -- what a client may be sent ------------------------------------------------------------
# How one connection carries a message: meaningless once the message is read whole, as a
# fetched answer is (host/fetch/response.py).
CONNECTION_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection",
                                "transfer-encoding"})
# Headers about one connection, which the front door (aiohttp) writes for itself: never
# taken from a guest's answer, nor passed on between processes (host/net/peers.py), nor
# sent by a guest's fetch (host/fetch/transport.py). `expect` is answered (100-continue)
# by the process that reads the body.
HOP_BY_HOP = CONNECTION_HEADERS | {"content-length", "upgrade", "te", "trailer",
                                   "proxy-authenticate", "expect"}
# The front door's answer to a host error carries the error's wire kind (errors.py's
# `kind`) beside its status and one line of text, so that a client need not read the
# words (host/net/frontdoor.py; the CLI's client reads it, host/cli/client.py).
ERROR_KIND = "wk-error-kind"
# Headers only the host writes in an answer: a guest's own are dropped, so that a guest
# cannot pass its answer off as a host error.
HOST_ONLY = frozenset({ERROR_KIND})
# RFC 9110 5.6.2: a field name is a token of these characters, nothing else (no space,
# no colon, no CR/LF).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 5.5: a field value is visible characters, spaces and tabs. Any other control
# character (NUL, CR, LF, DEL...) is refused: some clients and proxies split on them. So
# are the C1 controls (U+0080..U+009F: NEL is a line break to some, CSI starts a terminal's
# escape sequence), which UTF-8 or Latin-1 would carry as bytes a reader may decode back.
# A guest's fetch applies the same rule (host/fetch/transport.py).
CONTROL_CHARACTER = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
# A lone surrogate has no UTF-8 form to write.
_BAD_VALUE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
# ": " and CRLF, per header on the wire.
_HEADER_FRAMING = 4
# What the front door (aiohttp) writes beside an answer's own headers, with the most
# characters each value may take: Content-Length always (an answer's own is dropped, as
# hop-by-hop), Connection when the connection closes or an HTTP/1.0 client keeps it, and
# Content-Type, Date and Server unless the answer has its own. A client counts them with
# the answer's (Python's http.client reads 99 at most), so the caps count them too.
SERVER_HEADERS = {"content-length": 20, "connection": 10, "content-type": 24, "date": 29,
                  "server": 64}


def answer_headers(status: int, headers: list[tuple[str, str]], max_headers: int,
                   max_bytes: int, *, from_guest: bool = True) -> list[tuple[str, str]]:
    """The headers of an answer to send to a client, hop-by-hop ones left out, and the
    host's own (`HOST_ONLY`) too when the answer is a guest's (not another process's or
    node's answer, already checked there).

    Raises GuestFailed, naming the first problem, for a status that is not a final one
    (200..599: a 1xx would leave the client waiting for an answer that never comes),
    a name that is not an HTTP token, a value with a control character, or more than
    `max_headers` headers or `max_bytes` of them (UTF-8) on the wire: those the answer
    keeps and those the front door adds (`SERVER_HEADERS`, at their largest)."""
    if not isinstance(status, int) or not 200 <= status <= 599:
        raise GuestFailed(f"the answer's status {status!r} is not a final HTTP status "
                          "(200..599)")
    if len(headers) > max_headers:  # before any work per header
        raise GuestFailed(f"the answer has {len(headers)} headers, over the cap of "
                          f"{max_headers}")
    for name, value in headers:
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise GuestFailed(f"the answer's header name {_shown(name)} is not an HTTP "
                              "token")
        if not isinstance(value, str) or _BAD_VALUE.search(value):
            raise GuestFailed(f"the answer's header {name} has a control character in "
                              "its value")
    left_out = HOP_BY_HOP | HOST_ONLY if from_guest else HOP_BY_HOP
    kept = [(k, v) for k, v in headers if k.lower() not in left_out]
    own = {k.lower() for k, _ in kept}
    added = [n for n in SERVER_HEADERS if n not in own]
    if len(kept) + len(added) > max_headers:
        raise GuestFailed(f"the answer has {len(kept) + len(added)} headers on the wire "
                          f"({len(kept)} of its own and {len(added)} the server adds), "
                          f"over the cap of {max_headers}")
    size = sum(len(k) + len(v.encode()) + _HEADER_FRAMING for k, v in kept)
    size += sum(len(n) + SERVER_HEADERS[n] + _HEADER_FRAMING for n in added)
    if size > max_bytes:
        raise GuestFailed(f"the answer's headers are {size} bytes on the wire, with the "
                          f"server's own, over the cap of {max_bytes}")
    return kept


def _shown(name: object) -> str:
    """A refused name, short and on one line, for the reason sent to the client."""
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "..."
