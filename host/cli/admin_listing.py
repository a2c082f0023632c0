"""The operators' client's reads of the host's listing (`/_wk/actors/{class}`, as `wkhost
workflow list` reads it: host/cli/instances.py): one request a page of 10,000, and no
instance runs an event for it. WorkflowAdmin (client.py) has them."""

from __future__ import annotations

import json
from typing import Any

from wkguest.workflow.errors import WorkflowError

from .answers import text_of
from .instances import Instance, listing_url, workflow_instances

_LIST_PAGE = 1000


class Listing:
    """WorkflowAdmin's listing reads, over its `_send` and `base_url`."""

    base_url: str

    def _send(self, method: str, url: str, body: bytes | None = None,
              headers: dict[str, str] | None = None, timeout: float | None = None
              ) -> tuple[int, bytes, str, str]:
        raise NotImplementedError

    def ids(self, cls: str) -> list[str]:
        """Every actor id of `cls` the host knows (workflow instances or not)."""
        ids: list[str] = []
        while True:
            page = self._listing_page(cls, {"after": ids[-1] if ids else "",
                                            "limit": _LIST_PAGE})["ids"]
            ids.extend(page)
            if len(page) < _LIST_PAGE:
                return ids

    def list(self, cls: str, state: str | None = None) -> list[Instance]:
        """(id, summary) of each instance of `cls`, in `state` if given, in id order. The
        summary: its "state", "updated_at" (ms, host clock: when it entered that state),
        "labels" and "started_at" (its first published state; None if an older host
        published it), from the host's index, as `wkhost workflow list` reads it."""
        return workflow_instances(lambda params: self._listing_page(cls, params),
                                  status=state)

    def _listing_page(self, cls: str, params: dict[str, Any]) -> dict[str, Any]:
        status, body, _, _ = self._send("GET", listing_url(self.base_url, cls, params))
        if status != 200:
            raise WorkflowError("refused", text_of(body) or f"status {status}", status)
        page: dict[str, Any] = json.loads(body)
        return page

