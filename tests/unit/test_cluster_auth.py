"""The header that authenticates what the cluster's nodes pass each other
(host/net/cluster_auth.py): good for its one method and target, its secret, its time."""

from __future__ import annotations

from wkhost.net import cluster_auth

SECRET = b"s" * 32


def test_a_signed_request_verifies_for_its_method_target_and_body_only() -> None:
    value = cluster_auth.sign(SECRET, "POST", "/_wk/peer/call", b"{}", now=1_000_000)
    assert cluster_auth.verify(SECRET, value, "post", "/_wk/peer/call", b"{}", now=1_000_010)
    assert not cluster_auth.verify(SECRET, value, "POST", "/_wk/peer/call", b"{ }",
                                   now=1_000_010)
    assert not cluster_auth.verify(SECRET, value, "GET", "/_wk/peer/call", b"{}",
                                   now=1_000_010)
    assert not cluster_auth.verify(SECRET, value, "POST", "/probe/p1/sql", b"{}",
                                   now=1_000_010)
    assert not cluster_auth.verify(b"t" * 32, value, "POST", "/_wk/peer/call", b"{}",
                                   now=1_000_010)


def test_an_old_or_malformed_header_does_not_verify() -> None:
    value = cluster_auth.sign(SECRET, "GET", "/x", now=1_000_000)
    assert not cluster_auth.verify(SECRET, value, "GET", "/x", now=1_000_000 + 301)
    assert not cluster_auth.verify(SECRET, value, "GET", "/x", now=1_000_000 - 301)
    for bad in ("", ".", "abc.def", "1000000", "1000000.", value + "0"):
        assert not cluster_auth.verify(SECRET, bad, "GET", "/x", now=1_000_000)
