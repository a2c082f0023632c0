"""One request to a running `wkhost serve`, blocking: the one HTTP helper of the commands
(`call`, `actors`), of the workflow admin client (host/cli/client.py) and of the demo
(examples/demo.py). Each says in its own words what went wrong.

    answer = request("GET", f"{server}/_wk/actors/orders", token=token)
    answer.status, answer.content_type, answer.body

Any HTTP status is an answer. No answer at all (no connection, a timeout, a connection
that breaks) is NoAnswer, which holds the OSError that stopped it. A reply that is not
HTTP raises http.client's own error, as urllib does: each caller decides what that is.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import NamedTuple

from ..wire import ERROR_KIND


class Answer(NamedTuple):
    status: int
    content_type: str  # as sent, its parameters (charset=...) included
    body: bytes
    error_kind: str = ""  # a host error's wire kind (host/wire.py's ERROR_KIND), if any


class NoAnswer(Exception):
    """No answer came from `url`: `error` says why (a URLError when there was no
    connection, else the OSError that broke the exchange)."""

    def __init__(self, url: str, error: OSError) -> None:
        super().__init__(f"{url}: {error}")
        self.url = url
        self.error = error


def request(method: str, url: str, *, token: str | None = None, body: bytes | None = None,
            headers: dict[str, str] | None = None, timeout: float = 60) -> Answer:
    """`method url`, as the operator when `token` is given (the admin token)."""
    req = urllib.request.Request(url, data=body, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Answer(resp.status, resp.headers.get("Content-Type", ""), resp.read(),
                          resp.headers.get(ERROR_KIND, ""))
    except urllib.error.HTTPError as e:
        with e:
            got = e.headers
            return Answer(e.code, got.get("Content-Type", "") if got else "", e.read(),
                          got.get(ERROR_KIND, "") if got else "")
    except OSError as e:  # URLError included
        raise NoAnswer(url, e) from e
