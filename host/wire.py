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
# RFC 9110 5.6.2: a field name is a token of these characters, nothing else (no space,
# no colon, no CR/LF).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 5.5: a field value is visible characters, spaces and tabs. Any other control
# character (NUL, CR, LF, DEL...) is refused: some clients and proxies split on them. So
# is a lone surrogate, which has no UTF-8 form to write.
_BAD_VALUE = re.compile("[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")
# ": " and CRLF, per header on the wire.
_HEADER_FRAMING = 4


def answer_headers(status: int, headers: list[tuple[str, str]], max_headers: int,
                   max_bytes: int) -> list[tuple[str, str]]:
    """The headers of an answer to send to a client, hop-by-hop ones left out.

    Raises GuestFailed, naming the first problem, for a status that is not a final one
    (200..599: a 1xx would leave the client waiting for an answer that never comes),
    more than `max_headers` headers, more than `max_bytes` of them on the wire (UTF-8),
    a name that is not an HTTP token, or a value with a control character."""
    if not isinstance(status, int) or not 200 <= status <= 599:
        raise GuestFailed(f"the answer's status {status!r} is not a final HTTP status "
                          "(200..599)")
    if len(headers) > max_headers:
        raise GuestFailed(f"the answer has {len(headers)} headers, over the cap of "
                          f"{max_headers}")
    size = 0
    for name, value in headers:
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise GuestFailed(f"the answer's header name {_shown(name)} is not an HTTP "
                              "token")
        if not isinstance(value, str) or _BAD_VALUE.search(value):
            raise GuestFailed(f"the answer's header {name} has a control character in "
                              "its value")
        size += len(name) + len(value.encode()) + _HEADER_FRAMING
    if size > max_bytes:
        raise GuestFailed(f"the answer's headers are {size} bytes, over the cap of "
                          f"{max_bytes}")
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]


def _shown(name: object) -> str:
    """A refused name, short and on one line, for the reason sent to the client."""
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "..."
