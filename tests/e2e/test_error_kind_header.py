"""The front door's answer to a host error names the error's kind (`wk-error-kind`,
host/wire.py) beside its status and its one line of text, which stay as they were; the
CLI's client tells "not a workflow class" by that kind, not by the words."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from wkguest.workflow.errors import WorkflowError
from wkguest.workflow.serve import PROTOCOL
from wkhost.wire import ERROR_KIND

from . import workflow_support
from .workflow_support import ShopFactory

workflow_wasm = workflow_support.workflow_wasm
shop_factory = workflow_support.shop_factory


def _refusal(url: str, token: str, headers: dict[str, str]) -> urllib.error.HTTPError:
    req = urllib.request.Request(url, data=b"\xa0", method="POST",
                                 headers={"Authorization": f"Bearer {token}", **headers})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(req, timeout=30)
    return caught.value


def test_a_host_error_names_its_kind_and_the_cli_reads_it(shop_factory: ShopFactory) -> None:
    shop = shop_factory()
    base, token = shop.server.url, shop.server.token
    # A class that does not declare the protocol the request speaks: 404, and its kind.
    e = _refusal(shop.admin.url("ledger", "main", "status"), token, {"wk-protocol": PROTOCOL})
    with e:
        assert e.code == 404 and e.headers[ERROR_KIND] == "NotThatProtocol"
        assert f"does not declare the protocol {PROTOCOL!r}" in e.read().decode()
    # An unknown class is a 404 too, of another kind.
    e = _refusal(f"{base}/nosuch/main/x", token, {})
    with e:
        assert e.code == 404 and e.headers[ERROR_KIND] == "UnknownClass"
    # The CLI's client: the kind, not the words.
    with pytest.raises(WorkflowError) as told:
        shop.admin.status("ledger", "main")
    assert told.value.kind == "not-a-workflow", told.value
    with pytest.raises(WorkflowError) as told:
        shop.admin.status("nosuch", "main")
    assert told.value.kind != "not-a-workflow", told.value
