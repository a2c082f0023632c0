"""The console reaches any node's instances: an action taken through one node on an
instance another node holds is passed to that node (the signed node hop, with the
console node's admin token, which every node shares: docs/cluster.md) and acts there.
Driven through the console's HTTP API with a session the admin token makes, as a
browser's would be (its pages are tests/browser's)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from wkhost.cli.client import WorkflowAdmin
from wkhost.net.console import session
from wkhost.net.tokens import Caller

from .load import ORDER, call
from .nodes import Cluster, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def _action(url: str, token: str, doc: dict[str, Any]) -> tuple[int, Any]:
    """A console action, as the console's page sends it: its session's cookie and CSRF
    token, from the node's own origin."""
    cookie = session.new_cookie(token, Caller("admin", "operator"))
    req = urllib.request.Request(
        f"{url}{session.PATH}/api/action", data=json.dumps(doc).encode(), method="POST",
        headers={"Content-Type": "application/json", "Origin": url,
                 "Cookie": f"{session.COOKIE}={cookie}",
                 session.CSRF_HEADER: session.csrf_of(token, cookie)})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_a_console_action_through_one_node_acts_on_another_nodes_instance(
        cluster: Cluster) -> None:
    oid = "console-1"
    status, doc = call(cluster.node(0).url, "POST", f"/app/web/orders/{oid}", ORDER)
    assert 200 <= status < 300, doc  # not approved: it waits for its approval
    owner = cluster.owner(oid)
    assert owner is not None
    holder = cluster.node(cluster.index_of(owner))
    entry = cluster.node((cluster.index_of(owner) + 1) % 3)  # not the holder
    admin = WorkflowAdmin(holder.url, cluster.token)
    wait_until(lambda: admin.status("orders", oid).state == "waiting", 120,
               "the order waits for its approval")

    status, doc = _action(entry.url, cluster.token,
                          {"cls": "orders", "id": oid, "action": "pause"})
    assert status == 200 and doc["status"] == 200, doc
    assert doc["answer"]["state"] == "paused" and doc["error"] is None, doc
    assert admin.status("orders", oid).state == "paused"  # as its holder sees it
