"""`wkhost serve`'s options, and the HostConfig they make.

The options that set a HostConfig field are made from the field (`flag(...)` in
host/config.py): its option, its help, its default in the option's unit. Only the
options of the command itself are written here: which classes to serve, where to
listen, how many processes, the token, the log's level and format, and the fake clock.
They take their places in --help between the fields', before the field each is keyed to.
"""

from __future__ import annotations

import argparse
from dataclasses import Field
from pathlib import Path
from typing import Any

from ..config import HostConfig, serve_flags, usable_cores
from ..flags import Flag
from ..logs import LOG_FORMATS
from ..net.supervisor import MAX_PROCESSES


def add_serve_options(s: argparse.ArgumentParser) -> None:
    for f, spec in serve_flags():
        if f.name in _BEFORE_FIELD:
            _BEFORE_FIELD[f.name](s)
        add_config_option(s, f, spec)


def add_config_option(p: argparse.ArgumentParser, f: Field[Any], spec: Flag) -> None:
    """The option of HostConfig field `f`, its default in the option's unit."""
    if isinstance(f.default, bool):
        # A switch on by default can be turned off (--no-...); one off by default, on.
        action = argparse.BooleanOptionalAction if f.default else "store_true"
        p.add_argument(spec.option, action=action, default=f.default, help=spec.help)
        return
    default = f.default if spec.serve_default is None else spec.serve_default
    p.add_argument(spec.option, type=spec.parse or type(f.default), metavar=spec.metavar,
                   default=_in_unit(default, spec.unit), help=spec.help)


def _in_unit(value: Any, unit: int) -> Any:
    return value // unit if unit != 1 else value


def option_dest(spec: Flag) -> str:
    """The attribute of the parsed arguments that holds the option's value."""
    return spec.option.removeprefix("--").replace("-", "_")


def config_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The HostConfig fields that serve's options set, each in the field's unit."""
    return {f.name: _times(getattr(args, option_dest(spec)), spec.unit)
            for f, spec in serve_flags()}


def _times(value: Any, unit: int) -> Any:
    return value * unit if unit != 1 else value


def host_config(args: argparse.Namespace, **more: Any) -> HostConfig:
    """The HostConfig of serve's options; `more` sets the fields no single option does."""
    return HostConfig(**config_fields(args), **more)


# -- the command's own options ----------------------------------------------------------
def _add_classes(s: argparse.ArgumentParser) -> None:
    s.add_argument("--actor", action="append", default=[], metavar="NAME=FILE.wasm",
                   required=True, help="serve FILE.wasm as class NAME (repeatable)")
    s.add_argument("--access", action="append", default=[], metavar="NAME=internal|public",
                   help="internal: only actors and operators may call NAME (default public)")
    s.add_argument("--reuse-instances", action="append", default=[], metavar="NAME",
                   help="let an instance of class NAME that its actor let go serve NAME's "
                        "next new actor (repeatable). Each new actor then skips its "
                        "instantiation and clean-up, and runs warm code. The price: the "
                        "guest's module globals outlive an actor (its Actor object does "
                        "not), so keep per-actor state on the object or in SQLite. A "
                        "trapped instance is never reused (default: none; every instance "
                        "serves one actor)")
    s.add_argument("--schedules", nargs="?", const="schedules", default=None, metavar="NAME",
                   help="also serve the schedule class that ships with wkhost, as class "
                        "NAME (default schedules), internal: `wkhost schedule create` "
                        "makes its schedules, each one an actor that starts instances of a "
                        "workflow class on a cron spec. Its component is built from the "
                        "guest SDK with the build cache ($WKHOST_CACHE_DIR, else "
                        "~/.cache/wkhost/components): the first time takes a while")


def _add_address(s: argparse.ArgumentParser) -> None:
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    s.add_argument("--port", type=int, default=8080, help="port (default %(default)s; 0: any)")


def _add_processes(s: argparse.ArgumentParser) -> None:
    s.add_argument("--processes", type=_processes, default=AUTO, metavar="N|auto",
                   help="serve with N processes, each owning a fixed share of the actors "
                        "and running its events on its own core; any of them takes any "
                        "request and passes it to the right one. About one core's worth "
                        "of events is what one process runs. auto: one a core this "
                        "server may run on (at most 64), and 1 with --cluster "
                        "(default %(default)s)")
    _add_supervised(s)
    s.add_argument("--cpu-affinity", choices=("auto", "off"), default="auto",
                   help="with --processes N: auto gives each process its own share of the "
                        "cores, one core each with as many processes as cores, when there "
                        "are at least N; off lets the kernel place them (default %(default)s)")


AUTO = "auto"


def _processes(text: str) -> int | str:
    if text == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number or auto, not {text!r}") from None


def processes(args: argparse.Namespace) -> int:
    """--processes as a number: auto is one a core this process may run on (in a cpuset,
    its cores), and 1 in cluster mode, where each process is a member of its own. One of
    --processes N is told N by its supervisor (--process K/N)."""
    if args.process is not None:
        return int(str(args.process).split("/")[1])
    if args.processes != AUTO:
        return int(args.processes)
    if args.cluster:
        return 1
    return min(usable_cores(), MAX_PROCESSES)


def _add_supervised(s: argparse.ArgumentParser) -> None:
    """Set by the supervisor of --processes N for each process it starts."""
    s.add_argument("--process", help=argparse.SUPPRESS)
    s.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)
    s.add_argument("--supervisor-pid", type=int, help=argparse.SUPPRESS)
    s.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    s.add_argument("--fake-clock-start", type=int, help=argparse.SUPPRESS)
    s.add_argument("--cores", help=argparse.SUPPRESS)


def _add_operation(s: argparse.ArgumentParser) -> None:
    s.add_argument("--allow-http", action="append", default=[], metavar="HOST[:PORT]",
                   help="let guests fetch from HOST (repeatable; default: nowhere)")
    s.add_argument("--admin-token-file", type=Path,
                   help="operator token file (default DATA/_host/admin-token, made if missing)")
    s.add_argument("--tokens-file", type=Path, metavar="FILE",
                   help="named tokens, a line each: NAME ROLE SECRET, the role operator "
                        "(acts and sees) or reader (sees); SECRET the token or sha256:HEX "
                        "(docs/operating.md, \"Tokens\"); the admin token stays an "
                        "operator's, named admin (default: the admin token alone)")
    s.add_argument("--log-level", default="info",
                   choices=["debug", "info", "warning", "error"], help="(default %(default)s)")
    s.add_argument("--log-format", default="logfmt", choices=LOG_FORMATS,
                   help="the log's lines, on stderr: logfmt (key=value pairs, quoted and "
                        "escaped where a value needs it) or json (one object a line); both "
                        "with the keys ts, level, logger, msg, a record's own fields (a "
                        "trap's class, id, event and reason) and exc (default %(default)s)")
    s.add_argument("--fake-clock", action="store_true",
                   help="testing only: a clock that moves only by POST /_wk/clock/advance; "
                        "it never goes back across restarts on the same --data (it starts "
                        "at the later of the real time and the time it last had, kept in "
                        "DATA/_host/fake-clock)")
    s.add_argument("--fetch-via", metavar="URL",
                   help="testing only, with --fake-clock: send every fetch of the actors "
                        "to this local server (http://127.0.0.1:PORT) instead, the URL "
                        "asked for in the wk-fetch-url header (wkhost's test kit answers "
                        "there)")


# Where the command's own options go in --help: before these HostConfig fields' options.
_BEFORE_FIELD = {"data_dir": _add_classes, "cpu_budget_ms": _add_address,
                 "workers": _add_processes, "always_fresh_instance": _add_operation}
