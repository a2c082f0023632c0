"""Testing only (`wkhost serve --fake-clock --fetch-via URL`): every guest fetch goes to
one local server, which answers it as the test says (wkhost's test kit, testkit/).

The fetch is sent to `via` with its own method, headers and body, and the URL the guest
asked for in `wk-fetch-url`; the answer is the guest's. An answer carrying
`wk-fetch-error: KIND` is instead the fetch's failure of that kind (its body the
message), so a test can make a fetch fail as the network would.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .errors import ErrorKind, FetchError
from .policy import FetchPolicy
from .response import FetchResponse
from .transport import FetchRequest, fetch

URL_HEADER = "wk-fetch-url"
ERROR_HEADER = "wk-fetch-error"
_KINDS: frozenset[str] = frozenset(
    ("denied", "timeout", "too-large", "incomplete", "connect", "invalid"))


def check_via(url: str) -> str:
    """`url` if it is an http:// URL of a loopback address and a port. Raises
    ValueError naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost") \
            or parts.port is None:
        raise ValueError(f"--fetch-via {url!r}: give http://127.0.0.1:PORT (tests only)")
    return f"http://127.0.0.1:{parts.port}"


def fetch_via(req: FetchRequest, policy: FetchPolicy, via: str, deadline: float
              ) -> FetchResponse:
    """`req`, answered by the server at `via` (see the module's doc). Raises FetchError."""
    port = urlsplit(via).port
    to_server = FetchPolicy(allow=(f"127.0.0.1:{port}",), max_redirects=0,
                            max_response_bytes=policy.max_response_bytes,
                            default_timeout_ms=policy.default_timeout_ms)
    headers = [(k, v) for k, v in req.headers if k.lower() != URL_HEADER]
    sent = FetchRequest(req.method, f"{via}/", [*headers, (URL_HEADER, req.url)], req.body,
                        req.timeout_ms)
    resp = fetch(sent, to_server, deadline)
    kind = next((v for k, v in resp.headers if k.lower() == ERROR_HEADER), None)
    if kind is not None:
        said: ErrorKind = kind if kind in _KINDS else "connect"  # type: ignore[assignment]
        raise FetchError(said, resp.body.decode("utf-8", "replace"))
    return resp
