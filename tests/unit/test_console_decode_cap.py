"""The console decodes a guest's answer on the event loop (host/net/console/calls.py):
up to a cap, past which the answer is shown by its size, never decoded."""

from __future__ import annotations

import cbor2
from wkhost.net.console import calls


def test_an_answer_past_the_cap_is_shown_by_its_size_not_decoded() -> None:
    small = cbor2.dumps({"steps": [{"pos": 0, "value": "x" * 1000}]})
    assert calls.decoded(calls.CBOR, small) == {"steps": [{"pos": 0, "value": "x" * 1000}]}
    big = cbor2.dumps({"steps": ["x" * calls.DECODED_MAX]})
    assert calls.decoded(calls.CBOR, big) == (
        f"an answer of {len(big)} bytes, over the console's cap of {calls.DECODED_MAX}")
