"""`wkhost call`: one request to an actor, as the operator, and its answer shown: its
bytes to a pipe or a file, and on a terminal what it can decode, decoded."""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import cbor2

from .admin import Answer
from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    operator_request,
    operator_token,
    read_input_file,
    with_exit_codes,
)

_CALL_EPILOG = """\
examples:
  wkhost call counter/c1 /count                    GET /count of actor c1 of class counter
  wkhost call counter/c1 /incr -X POST             another method
  wkhost call app/web /orders/o1 -d '{"qty": 1}'   POST a body (-d @FILE sends a file)
  wkhost call orders/o1 /wk-workflow/v1/status -X POST
                                                   a workflow's status, its CBOR decoded
  wkhost call counter/c1 /count -o count.json      the answer's bytes into a file
  wkhost call counter/c1 /count -i                 the status line too (HTTP 200)

On a terminal, the answer is shown by its content type: text and JSON as they are, CBOR
decoded (as JSON, bytes as h'..'), anything else as a note of its size and type. To a
pipe or a file, or with --raw, the bytes come as they are."""


def add_call(sub: Any) -> None:
    c = sub.add_parser("call", help="send one request to an actor (as an operator)",
                       description="Send one request to CLASS/ID through the operator path "
                                   "and print the answer.",
                       epilog=_CALL_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    with_exit_codes(c, "call")
    c.add_argument("target", metavar="CLASS/ID", help="the actor, e.g. counter/c1")
    c.add_argument("path", nargs="?", default="/", help="path inside the actor (default /)")
    c.add_argument("--method", "-X", default=None, help="default GET, or POST with --body")
    c.add_argument("--body", "-d", default=None, help="TEXT, or @FILE to send a file")
    c.add_argument("--include", "-i", action="store_true", help="print the status line too")
    shown = c.add_mutually_exclusive_group()
    shown.add_argument("--raw", action="store_true",
                       help="write the answer's bytes as they are, even to a terminal")
    shown.add_argument("--output", "-o", type=Path, metavar="FILE",
                       help="write the answer's bytes to FILE (the status line, with -i, "
                            "still goes to stdout)")
    add_server_args(c)
    c.set_defaults(run=run_call)


def run_call(args: argparse.Namespace) -> int:
    cls, sep, actor_id = args.target.partition("/")
    if not sep or not cls or not actor_id:
        raise CliError("the target is CLASS/ID, e.g. counter/c1")
    checked_target(cls, actor_id)
    body = None if args.body is None else (
        read_input_file(args.body[1:]) if args.body.startswith("@") else args.body.encode())
    if args.output is not None and (args.output.is_dir() or not args.output.parent.is_dir()):
        raise CliError(f"-o {args.output}: not a file in an existing directory")
    method = args.method or ("POST" if body is not None else "GET")
    path = args.path if args.path.startswith("/") else "/" + args.path
    url = f"{args.server.rstrip('/')}/{cls}/{quote(actor_id, safe='')}{path}"
    answer = operator_request(method, url, operator_token(args), body)
    if args.include:
        print(f"HTTP {answer.status}")
    _show(answer, args)
    return Exit.OK if answer.status < 400 else Exit.FAILED


def _show(answer: Answer, args: argparse.Namespace) -> None:
    """The answer's body: to -o FILE, raw to a pipe (or --raw), else readable."""
    if args.output is not None:
        try:
            args.output.write_bytes(answer.body)
        except OSError as e:
            raise CliError(f"cannot write {args.output}: {e.strerror}", Exit.FAILED) from None
    elif args.raw or not sys.stdout.isatty():
        sys.stdout.flush()  # the status line first
        sys.stdout.buffer.write(answer.body)
    elif answer.body:
        text = readable_body(answer.body, answer.content_type)
        print(text, end="" if text.endswith("\n") else "\n")


# -- an answer on a terminal ------------------------------------------------------------
def readable_body(data: bytes, content_type: str) -> str:
    """How `wkhost call` shows an answer on a terminal: what it can decode, decoded;
    anything else (or text with control characters, which could drive the terminal) as
    a note of what it is."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/cbor" or kind.endswith("+cbor"):
        shown = _cbor_text(data)
        if shown is not None:
            return shown
    elif not kind or kind.startswith("text/") or kind == "application/json" \
            or kind.endswith("+json"):
        text = _printable(data, content_type)
        if text is not None:
            return text
    size = f"{len(data)} byte" + ("" if len(data) == 1 else "s")
    return (f"<{size} of {kind or 'an unnamed type'}: not shown on a terminal; "
            "--raw prints them, -o FILE saves them>")


def _printable(data: bytes, content_type: str) -> str | None:
    charset = content_type.partition("charset=")[2].split(";")[0].strip().strip('"')
    try:
        text = data.decode(charset or "utf-8")
    except (UnicodeDecodeError, LookupError):
        return None
    return None if _CONTROL.search(text) else text


# C0 and C1 control characters but tab and the line ends: an escape sequence, say, that
# would drive the terminal rather than be read.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _cbor_text(data: bytes) -> str | None:
    """One CBOR item and nothing after it, as indented JSON; None if it is not that."""
    fp = io.BytesIO(data)
    try:
        doc = cbor2.CBORDecoder(fp).decode()
    except Exception:  # whatever stops the decoder: then it is shown as bytes
        return None
    if fp.tell() != len(data):
        return None
    return json.dumps(_jsonish(doc), indent=2, ensure_ascii=False)


def _jsonish(v: Any) -> Any:
    """A decoded CBOR value in JSON's terms: bytes as h'hex' (CBOR's diagnostic notation),
    a tag as {"tag N": value}, a key that is not text as its JSON."""
    if isinstance(v, dict):
        return {k if isinstance(k, str) else json.dumps(_jsonish(k)): _jsonish(x)
                for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonish(x) for x in v]
    if isinstance(v, bytes | bytearray):
        return f"h'{bytes(v).hex()}'"
    if isinstance(v, cbor2.CBORTag):
        return {f"tag {v.tag}": _jsonish(v.value)}
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return str(v)  # a date, a decimal, a simple value: its text
