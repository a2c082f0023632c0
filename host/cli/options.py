"""What the `wkhost` commands share: the exit-code contract (one table, rendered into every
command's --help and checked against docs/cli.md by the tests), the error that carries
an exit code up to `main`, the checks of a class name and an id made before any request,
and the options of the commands that talk to a running server (call, actors, workflow)
with their one request as the operator.
Its own module, so that the commands' modules import it rather than each other."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import textwrap
import urllib.error
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from ..errors import BadRequest
from ..storage.paths import check_class, check_id
from .admin import Answer, NoAnswer, request

DEFAULT_SERVER = "http://127.0.0.1:8080"


# -- the exit-code contract ----------------------------------------------------------------
class Exit(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    UNREACHABLE = 3
    TIMED_OUT = 4
    # 5-9: room for more outcomes of any command.
    # 10-19: an instance's state, for the commands that report one (workflow start/status).
    WORKFLOW_FAILED = 10
    WORKFLOW_CANCELLED = 11
    WORKFLOW_PARKED = 12
    WORKFLOW_PAUSED = 13
    WORKFLOW_TERMINATED = 14
    INTERRUPTED = 130         # 128 + SIGINT, as a shell reports Ctrl-C
    BROKEN_PIPE = 141         # 128 + SIGPIPE, as a shell reports `cmd | head` for any tool


# The code of each state that is not "ok" to end in. Running, waiting and completed are 0.
STATE_EXITS = {"failed": Exit.WORKFLOW_FAILED, "cancelled": Exit.WORKFLOW_CANCELLED,
               "parked": Exit.WORKFLOW_PARKED, "paused": Exit.WORKFLOW_PAUSED,
               "terminated": Exit.WORKFLOW_TERMINATED}

WORKFLOW = frozenset(f"workflow {c}" for c in
                     ("start", "status", "send-event", "cancel", "steps", "list", "events",
                      "query", "terminate", "pause", "resume", "rescue", "restart", "bulk",
                      "export", "import", "compat", "update"))
STATEFUL = frozenset({"workflow start", "workflow status"})
SCHEDULE = frozenset(f"schedule {c}" for c in
                     ("create", "list", "describe", "pause", "resume", "delete"))
TO_SERVER = frozenset({"call", "actors", "audit"}) | WORKFLOW | SCHEDULE
EVERY = TO_SERVER | {"build", "serve", "test crash-points"}
CLIENTS = EVERY - {"serve"}
OTHERS = CLIENTS - STATEFUL
_GROUPS = {EVERY: "every command", CLIENTS: "every command but `serve`",
           OTHERS: "every command but `serve`, `workflow start` and `workflow status`",
           TO_SERVER: "`call`, `actors`, `workflow *`, `schedule *`, `audit`",
           WORKFLOW: "`workflow *`", SCHEDULE: "`schedule *`"}


@dataclass(frozen=True)
class Row:
    code: str                  # one code, or a range of reserved ones
    meaning: str
    commands: frozenset[str]   # where the code means this


CONTRACT = (
    Row("0", "ok", OTHERS),
    Row("0", "ok: the instance is running, waiting, compensating or completed", STATEFUL),
    Row("0", "it stopped cleanly (on SIGTERM or SIGINT)", frozenset({"serve"})),
    Row("1", "the answer's status was 400 or more (its body is shown)", frozenset({"call"})),
    Row("1", "the server refused: an unknown class, say", frozenset({"actors"})),
    Row("1", "the operation failed: an unknown instance, an event to a finished one, "
             "a cancel or terminate of one that had already finished otherwise, a move its "
             "state refuses (a pause of a parked one, a resume of one not paused, a rescue "
             "after compensations), a bulk move that failed for any instance, a class "
             "that is not a "
             "workflow's, a query the workflow does not register (or whose handler failed, "
             "or whose journal does not replay), an update it refuses (no handler of that "
             "name, its validator) or whose handler failed, an import to an id that has "
             "an instance "
             "or of a document that does not fit, a compat report with an instance the new "
             "build would not replay, or the host's own error (a trapped instance)",
        WORKFLOW),
    Row("1", "the schedule refused: an unknown schedule, a create of one that exists, a "
             "bad cron spec, time zone or policy, a target that is not a workflow class "
             "served there (its message is printed), or a server that serves no schedule "
             "class", SCHEDULE),
    Row("1", "the server refused: a bad filter, or a log it cannot read",
        frozenset({"audit"})),
    Row("1", "the build failed (componentize-py's output is printed)", frozenset({"build"})),
    Row("1", "a boundary failed (the report names it and why), or the run without a kill "
             "did not end", frozenset({"test crash-points"})),
    Row("1", "it could not start, or stopped on an error", frozenset({"serve"})),
    Row("2", "bad usage: a bad flag or value, a bad class name or id, an input or body "
             "file that cannot be read, an input that is not JSON (or, to import, not an "
             "exported document), no admin token",
             TO_SERVER),
    Row("2", "bad usage: a bad flag or value, an APP that is not a readable .py file",
             frozenset({"build"})),
    Row("2", "bad usage: a bad flag or value", frozenset({"serve"})),
    Row("2", "bad usage: a bad flag or value, an APP or --actor file that cannot be read "
             "or is not .wasm or .py, an input that is not JSON, a bad events script",
        frozenset({"test crash-points"})),
    Row("3", "the server could not be reached, or did not answer in time", TO_SERVER),
    Row("4", "--wait: the --timeout was up before the instance finished (its status "
             "then is printed)", STATEFUL),
    Row("4", "the --timeout was up before the update's handler ended: its id is printed, "
             "to ask again with --update-id", frozenset({"workflow update"})),
    Row("10", "the instance failed", STATEFUL),
    Row("11", "the instance was cancelled", STATEFUL),
    Row("12", "the instance is parked: a failure that is not the workflow's own (a "
              "reordered deploy, say) stopped it, unfinished, until an operator moves it; "
              "its reason is printed", STATEFUL),
    Row("13", "the instance is paused: an operator paused it; it starts no new work "
              "until `workflow resume`", STATEFUL),
    Row("14", "the instance was terminated", STATEFUL),
    Row("15-19", "reserved for more states", STATEFUL),
    Row("130", "interrupted (Ctrl-C)", CLIENTS),
    Row("141", "its output was closed before all of it was written (a pipe to head, "
               "say): the code a shell gives a tool that SIGPIPE ended", CLIENTS),
)


def exit_status_epilog(command: str) -> str:
    """The contract's rows for `command` ("call", "workflow start", ...), for --help."""
    lines = ["exit status (all of it in docs/cli.md):"]
    for row in CONTRACT:
        if command in row.commands:
            lines += textwrap.wrap(row.meaning, 88, initial_indent=f"  {row.code:>5}  ",
                                   subsequent_indent=" " * 9)
    return "\n".join(lines)


def with_exit_codes(p: argparse.ArgumentParser, command: str) -> None:
    """Append the contract's rows for `command` to `p`'s epilog, kept as written."""
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the table's lines
    p.epilog = f"{p.epilog}\n\n{exit_status_epilog(command)}" if p.epilog \
        else exit_status_epilog(command)


def contract_markdown() -> str:
    """The whole contract as docs/cli.md shows it (the tests keep the two the same)."""
    out = ["| code | meaning | commands |", "| --- | --- | --- |"]
    for row in CONTRACT:
        names = _GROUPS.get(row.commands) or ", ".join(f"`{c}`" for c in sorted(row.commands))
        out.append(f"| {row.code} | {row.meaning} | {names} |")
    return "\n".join(out)


class CliError(Exception):
    """A command cannot go on: `main` prints "wkhost: error: MESSAGE" and exits `code`."""

    def __init__(self, message: str, code: Exit = Exit.USAGE) -> None:
        super().__init__(message)
        self.code = code


def checked_target(cls: str, actor_id: str | None = None) -> None:
    """Refuse a bad class name or id before any request, as the host would (exit 2)."""
    try:
        check_class(cls)
        if actor_id is not None:
            check_id(actor_id)
    except BadRequest as e:
        raise CliError(str(e)) from None


def read_input_file(path: str) -> bytes:
    """The bytes of an `@FILE` argument; one that cannot be read is bad usage."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from None


def json_arg(spec: str, what: str = "the value") -> Any:
    """A JSON argument, or `@FILE` to read it from a file. Raises CliError (bad usage)."""
    text = read_input_file(spec[1:]).decode(errors="replace") if spec.startswith("@") else spec
    try:
        return json.loads(text)
    except ValueError as e:
        raise CliError(f"{what} is not JSON ({e}): {text[:80]!r}") from None


# -- talking to a running server -------------------------------------------------------------
def add_server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", default=os.environ.get("WKHOST_SERVER", DEFAULT_SERVER),
                   help="the server's URL (default $WKHOST_SERVER or %(default)s)")
    p.add_argument("--data", type=Path, default=Path("wkdata"),
                   help="the server's data directory, to read its admin token (default ./wkdata)")
    p.add_argument("--token", default=os.environ.get("WKHOST_TOKEN"),
                   help="the admin token (default $WKHOST_TOKEN, else read from --data); "
                        "--token=VALUE takes any value, one that begins with '-' too")


# An option's own spelling (`--server`, `-h`, `--data=x`), as no admin token is written.
_OPTION_SHAPED = re.compile(r"-[A-Za-z]|--[a-z][a-z0-9-]*(=.*)?", re.DOTALL)


def token_attached(argv: list[str]) -> list[str]:
    """`argv`, with `--token VALUE` written `--token=VALUE` where VALUE begins with '-'
    (a token made before they never did): argparse reads such a VALUE as an option, and
    would refuse `--token` as given none. A VALUE shaped like an option is left as it is,
    so that a `--token` whose value was forgotten is still bad usage; so is all after
    `--`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        value = argv[i + 1] if i + 1 < len(argv) else ""
        if arg == "--token" and value.startswith("-") and value != "--" \
                and not _OPTION_SHAPED.fullmatch(value):
            out.append(f"--token={value}")
            i += 2
        else:
            out.append(arg)
            i += 1
    return out


def operator_token(args: argparse.Namespace) -> str:
    token: str | None = args.token
    if token:
        return token
    path = Path(args.data) / "_host" / "admin-token"
    try:
        return path.read_text().strip()
    except OSError:
        raise CliError(f"no admin token: pass --token, set WKHOST_TOKEN, or point --data "
                       f"at the server's data directory ({path} not found)") from None


def operator_request(method: str, url: str, token: str, body: bytes | None = None) -> Answer:
    """One request as the operator; any HTTP status is an answer. No answer at all (no
    connection, a timeout, a broken reply) is CliError with exit 3."""
    try:
        return request(method, url, token=token, body=body)
    except NoAnswer as e:
        if isinstance(e.error, urllib.error.URLError):
            raise CliError(f"cannot reach {url}: {e.error.reason}", Exit.UNREACHABLE) from None
        raise _no_answer(url, e.error) from None
    except http.client.HTTPException as e:
        raise _no_answer(url, e) from None


def _no_answer(url: str, error: Exception) -> CliError:
    return CliError(f"no answer from {url}: {error or type(error).__name__}", Exit.UNREACHABLE)
