"""The named tokens of `--tokens-file` (host/net/tokens.py): who a bearer token is, and a
file's every mistake refused with its place."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from wkhost.net.tokens import Caller, TokensFileError, read_tokens

ADMIN = "the-admin-token-of-this-host"
ANN, RITA = "ann-secret-0123456789", "rita-secret-0123456789"


def tokens_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text)
    return path


def test_each_token_names_its_caller_and_role(tmp_path: Path) -> None:
    hashed = hashlib.sha256(RITA.encode()).hexdigest()
    path = tokens_file(tmp_path, f"# who may do what\n\nann operator {ANN}\n"
                                 f"rita.b reader sha256:{hashed}  # her secret is not here\n")
    tokens = read_tokens(ADMIN, path)
    assert tokens.who(ANN) == Caller("ann", "operator") and tokens.who(ANN).acts
    assert tokens.who(f" {RITA}\n") == Caller("rita.b", "reader")
    assert not tokens.who(RITA).acts
    assert tokens.who(ADMIN) == Caller("admin", "operator")  # always, as before
    assert tokens.who(RITA[:-1]) is None and tokens.who("") is None
    assert tokens.names == ["admin", "ann", "rita.b"]


def test_without_a_file_the_admin_token_is_the_one(tmp_path: Path) -> None:
    tokens = read_tokens(ADMIN, None)
    assert tokens.who(ADMIN) == Caller("admin", "operator") and tokens.who(ANN) is None


@pytest.mark.parametrize("text, why", [
    ("ann operator\n", "a line is NAME ROLE SECRET, not 2 word(s)"),
    ("Ann operator " + ANN, "the name 'Ann' is not 1 to 64 of a-z 0-9 . _ -"),
    ("ann admin " + ANN, "the role is operator, reader or ingress:CLASS, not 'admin'"),
    ("ann reader short", "a secret has 16 characters or more"),
    ("ann reader sha256:abc", "sha256: is followed by 64 lowercase hex digits"),
    (f"ann reader {ANN}\nann operator {RITA}", "the name 'ann' is taken"),
    (f"admin reader {ANN}", "the name 'admin' is taken"),
    (f"ann reader {ANN}\nbo operator {ANN}", "this secret is another token's already"),
    (f"bo operator {ADMIN}", "this secret is another token's already"),
])
def test_a_bad_line_is_refused_with_its_place(tmp_path: Path, text: str, why: str) -> None:
    path = tokens_file(tmp_path, "# first line\n" + text)
    with pytest.raises(TokensFileError) as refused:
        read_tokens(ADMIN, path)
    line = 2 + text.rstrip("\n").count("\n")
    assert str(refused.value) == f"{path}:{line}: {why}"


def test_an_ingress_token_names_its_class(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text("web ingress:carts " + ANN + "\n")
    caller = read_tokens(ADMIN, f).who(ANN)
    assert caller is not None and (caller.role, caller.cls) == ("ingress", "carts")
    assert not caller.acts and not caller.sees
    f.write_text("web ingress:a/b " + ANN + "\n")
    with pytest.raises(TokensFileError, match="ingress:CLASS"):
        read_tokens(ADMIN, f)
