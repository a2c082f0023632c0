"""`wkhost test`: checks of a user's own workflows against the real host.

    wkhost test crash-points orders=orders.wasm --actor ledger=ledger.wasm \\
        --access ledger=internal --input '{"item": "book", "qty": 1, "amount": 1200}' \\
        --events approve.json

The harness itself is host/testkit/crash_points.py; this module is its command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .options import CliError, Exit, read_input_file, with_exit_codes

HELP = "check your own workflows against the real host (crash points)"


CRASH_POINTS = (
    "Run one instance of a workflow to its end once without a kill, then once per durable "
    "boundary that run reached (each step's attempt and record, each sleep, wait, group, "
    "child, compensation and the end), each time killing a real `wkhost serve "
    "--fake-clock` with SIGKILL at that boundary and restarting it on the same data. A run "
    "passes if the instance ends as the clean run did (state, output, error) and each "
    "step's function ran as often, or once more for the one step the kill fell inside "
    "(steps are at-least-once). The clock skips to each alarm; events come from --events.")
CRASH_POINTS_EPILOG = (
    "examples:\n"
    "  wkhost test crash-points orders=orders.wasm --actor ledger=ledger.wasm \\\n"
    "      --access ledger=internal --input @order.json --events approve.json\n"
    "  wkhost test crash-points flow.wasm --only sql-before:wk:result --json\n\n"
    "An events script is a JSON list, played in order: {\"event\": NAME, \"payload\":\n"
    "ANY} is sent once the instance waits for NAME; {\"advance\": \"2h\"} moves the\n"
    "clock. A wait for an event the script does not send times out.")


def add_test(sub: Any) -> None:
    t = sub.add_parser("test", help=HELP, description="Check a workflow of your own "
                       "against the real host. docs/testing-workflows.md has the guide.")
    tsub = t.add_subparsers(title="test commands", metavar="COMMAND")
    c = tsub.add_parser(
        "crash-points", help="kill the host at each durable boundary of a run and check "
        "that nothing is lost, run twice or left stuck", description=CRASH_POINTS,
        epilog=CRASH_POINTS_EPILOG)
    c.add_argument("app", metavar="[CLASS=]APP",
                   help="the workflow's component (.wasm; or the app's .py, built first), "
                        "served as CLASS (default: the file's name up to its first '-' "
                        "or '.')")
    c.add_argument("--actor", action="append", default=[], metavar="NAME=FILE",
                   help="another class to serve beside it, a service its steps call, say "
                        "(repeatable)")
    c.add_argument("--access", action="append", default=[], metavar="NAME=internal",
                   help="serve class NAME as internal (repeatable)")
    _add_run_options(c)
    with_exit_codes(c, "test crash-points")
    c.set_defaults(run=_crash_points)


def _add_run_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("--input", default="null", metavar="JSON|@FILE",
                   help="the instance's input (default null)")
    c.add_argument("--events", metavar="SCRIPT.json", help="the events and clock moves to "
                   "play (default none: each wait times out)")
    c.add_argument("--id", default="crash-points", help="the instance's id (default "
                   "%(default)s)")
    c.add_argument("--only", metavar="POINT,...", help="kill only at these crash points "
                   "(sql-after:wk:result, say; default: every boundary)")
    c.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)),
                   help="runs at once (default: the CPUs, %(default)s)")
    c.add_argument("--within", default="30 days", metavar="DURATION",
                   help="how far a run may skip the clock before its instance counts as "
                        "stuck (default %(default)s)")
    c.add_argument("--json", action="store_true", help="print the report as JSON")


def _crash_points(args: argparse.Namespace) -> int:
    from wkguest.durations import to_ms

    from ..storage.paths import check_class
    from ..testkit.crash_points import CrashPoints, HarnessError, Target
    from ..testkit.crash_script import ScriptError, load_script

    name, app = _class_and_app(args.app)
    others = [Target(n, _readable(f)) for n, f in (_pair(a, "--actor") for a in args.actor)]
    internal = {n for n, level in (_pair(a, "--access") for a in args.access)
                if level == "internal"}
    try:
        for cls in [name, *(t.cls for t in others)]:
            check_class(cls)
        within = to_ms(args.within, "--within")
        script = load_script(args.events) if args.events else []
    except (ValueError, TypeError, ScriptError) as e:
        raise CliError(str(e)) from None
    if args.jobs < 1:
        raise CliError(f"--jobs takes 1 or more, got {args.jobs}")
    harness = CrashPoints(
        Target(name, app, name in internal), _input(args.input),
        others=[Target(t.cls, t.app, t.cls in internal) for t in others], script=script,
        id=args.id, within_ms=within, jobs=args.jobs,
        only=args.only.split(",") if args.only else None,
        progress=lambda line: print(line, file=sys.stderr, flush=True))
    try:
        report = harness.run()
    except HarnessError as e:
        raise CliError(str(e), Exit.FAILED) from None
    print(json.dumps(report.doc(), indent=1, default=str) if args.json else report.text())
    return Exit.OK if report.ok else Exit.FAILED


def _class_and_app(spec: str) -> tuple[str, Path]:
    name, sep, file = spec.partition("=")
    if not sep:
        file, name = spec, Path(spec).name.split("-")[0].split(".")[0]
    return name, _readable(file)


def _readable(file: str) -> Path:
    path = Path(file)
    if path.suffix not in (".wasm", ".py"):
        raise CliError(f"{file}: give a component (.wasm) or an app's .py")
    try:
        path.open("rb").close()
    except OSError as e:
        raise CliError(f"cannot read {file}: {e.strerror}") from None
    return path


def _pair(item: str, what: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name or not value:
        raise CliError(f"{what} takes NAME=VALUE, got {item!r}")
    return name, value


def _input(text: str) -> Any:
    raw = read_input_file(text[1:]) if text.startswith("@") else text.encode()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CliError(f"--input is not JSON: {e}") from None
