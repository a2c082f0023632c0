"""Outgoing HTTP for guests: the host side of the WIT `http.fetch` import.

    policy.py     what a guest may fetch (FetchPolicy): the allow-list, the addresses a
                  name may resolve to
    redirects.py  the redirects followed, and what is sent on to them
    transport.py  `fetch`: the request, name lookups on a pool, connections and TLS
    response.py   reading the response head and body (FetchResponse)
    budget.py     the fetch's time budget
    errors.py     FetchError

Errors: `fetch` raises only FetchError, whose `str()` is one line "KIND: message":
    denied      the destination, its resolved address or a redirect target is not
                allowed, or there were more than `max_redirects` redirects
    timeout     the fetch's time budget ran out (budget.py; the message says whether
                the event's deadline or the request's timeout was the limit)
    too-large   the response body is over `policy.max_response_bytes` (named in the
                message); at most cap + 1 bytes are read, nothing is truncated silently
    incomplete  the body broke before its end: fewer bytes than Content-Length, a
                broken chunked encoding, a reset
    connect     DNS failure, refused or failed connection, TLS failure, no valid
                response head
    invalid     a malformed request: URL, scheme, method or header
"""

from .errors import FetchError
from .policy import FetchPolicy
from .response import FetchResponse
from .transport import FetchRequest, fetch

__all__ = ["FetchError", "FetchPolicy", "FetchRequest", "FetchResponse", "fetch"]
