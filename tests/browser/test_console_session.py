"""The console's session cookie and CSRF token (host/net/console/session.py), without a
browser: what any process can check with the admin token alone."""

from __future__ import annotations

from wkhost.net.console import session
from wkhost.net.tokens import Caller

TOKEN = "t0ken-of-this-host"
NOW = 1_800_000_000.0
ADMIN = Caller("admin", "operator")
RITA = Caller("rita.b", "reader")  # a name with a dot: the cookie's separator


def test_a_cookie_is_good_until_it_expires_and_holds_no_token() -> None:
    cookie = session.new_cookie(TOKEN, ADMIN, NOW)
    assert TOKEN not in cookie
    assert session.is_valid(TOKEN, cookie, NOW)
    assert session.is_valid(TOKEN, cookie, NOW + session.SESSION_S - 1)
    assert not session.is_valid(TOKEN, cookie, NOW + session.SESSION_S)
    assert session.new_cookie(TOKEN, ADMIN, NOW) != cookie  # each session its own id


def test_a_cookie_says_whose_session_it_is() -> None:
    cookie = session.new_cookie(TOKEN, RITA, NOW)
    assert session.caller_in(TOKEN, cookie, NOW) == RITA
    assert session.caller_in(TOKEN, session.new_cookie(TOKEN, ADMIN, NOW), NOW) == ADMIN


def test_a_cookie_changed_or_made_with_another_token_is_refused() -> None:
    cookie = session.new_cookie(TOKEN, RITA, NOW)
    version, expires, nonce, role, name, mac = cookie.split(".", 5)[:5] + [
        cookie.rpartition(".")[2]]
    name = cookie.split(".", 4)[4].rpartition(".")[0]
    later = f"{version}.{int(expires) + 3600}.{nonce}.{role}.{name}.{mac}"
    promoted = f"{version}.{expires}.{nonce}.operator.{name}.{mac}"
    renamed = f"{version}.{expires}.{nonce}.{role}.admin.{mac}"
    for bad in (later, promoted, renamed, f"{version}.{expires}.{nonce}.{role}.{name}."
                f"{'0' * len(mac)}", cookie[:-1], "", "v2", "v2.....",
                f"v1.{expires}.{nonce}.{mac}", TOKEN):
        assert not session.is_valid(TOKEN, bad, NOW), bad
    assert not session.is_valid("another-token", cookie, NOW)


def test_the_csrf_token_is_the_sessions_own() -> None:
    a, b = session.new_cookie(TOKEN, ADMIN, NOW), session.new_cookie(TOKEN, ADMIN, NOW)
    assert session.csrf_of(TOKEN, a) == session.csrf_of(TOKEN, a)
    assert session.csrf_of(TOKEN, a) != session.csrf_of(TOKEN, b)
    assert session.csrf_of(TOKEN, a) != session.csrf_of("another-token", a)
