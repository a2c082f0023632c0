"""The console's session cookie and CSRF token (host/net/console/session.py), without a
browser: what any process can check with the admin token alone."""

from __future__ import annotations

from wkhost.net.console import session

TOKEN = "t0ken-of-this-host"
NOW = 1_800_000_000.0


def test_a_cookie_is_good_until_it_expires_and_holds_no_token() -> None:
    cookie = session.new_cookie(TOKEN, NOW)
    assert TOKEN not in cookie
    assert session.is_valid(TOKEN, cookie, NOW)
    assert session.is_valid(TOKEN, cookie, NOW + session.SESSION_S - 1)
    assert not session.is_valid(TOKEN, cookie, NOW + session.SESSION_S)
    assert session.new_cookie(TOKEN, NOW) != cookie  # each session its own id


def test_a_cookie_changed_or_made_with_another_token_is_refused() -> None:
    cookie = session.new_cookie(TOKEN, NOW)
    version, expires, nonce, mac = cookie.split(".")
    later = f"{version}.{int(expires) + 3600}.{nonce}.{mac}"
    for bad in (later, f"{version}.{expires}.{nonce}.{'0' * len(mac)}", cookie[:-1],
                "", "v1", "v1...", f"v2.{expires}.{nonce}.{mac}", TOKEN):
        assert not session.is_valid(TOKEN, bad, NOW), bad
    assert not session.is_valid("another-token", cookie, NOW)


def test_the_csrf_token_is_the_sessions_own() -> None:
    a, b = session.new_cookie(TOKEN, NOW), session.new_cookie(TOKEN, NOW)
    assert session.csrf_of(TOKEN, a) == session.csrf_of(TOKEN, a)
    assert session.csrf_of(TOKEN, a) != session.csrf_of(TOKEN, b)
    assert session.csrf_of(TOKEN, a) != session.csrf_of("another-token", a)
    assert session.token_matches(f" {TOKEN}\n", TOKEN)
    assert not session.token_matches(TOKEN[:-1], TOKEN)
