"""`wkhost actors`: the ids of a class's actors, a page at a time."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any
from urllib.parse import quote, urlencode

from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    operator_request,
    operator_token,
    with_exit_codes,
)

_ACTORS_EPILOG = """\
examples:
  wkhost actors counter                    the ids of class counter's actors
  wkhost actors counter --limit 100        the first 100
  wkhost actors counter --after c42        the ids after c42 (the next page)
  wkhost actors counter | wc -l            how many (up to --limit)

Ids come one per line, in order. A full page ends with a line on stderr that says where
the next one begins."""


_MAX_LIMIT = 10_000  # the host's most ids a request (host/net/frontdoor.py)


def add_actors(sub: Any) -> None:
    a = sub.add_parser("actors", help="list the actors of a class",
                       description="List the ids of a class's actors, as the host knows them.",
                       epilog=_ACTORS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    with_exit_codes(a, "actors")
    a.add_argument("cls", metavar="CLASS", help="the class, e.g. counter")
    a.add_argument("--after", default="", metavar="ID",
                   help="list the ids after this one (paging; default: from the first)")
    a.add_argument("--limit", type=int, default=1000, metavar="N",
                   help=f"list at most N ids, 1 to {_MAX_LIMIT} (default %(default)s)")
    add_server_args(a)
    a.set_defaults(run=run_actors)


def run_actors(args: argparse.Namespace) -> int:
    checked_target(args.cls)
    if not 1 <= args.limit <= _MAX_LIMIT:
        raise CliError(f"--limit takes 1 to {_MAX_LIMIT}")
    q = urlencode({"after": args.after, "limit": args.limit})
    url = f"{args.server.rstrip('/')}/_wk/actors/{quote(args.cls, safe='')}?{q}"
    answer = operator_request("GET", url, operator_token(args))
    if answer.status != 200:
        print(f"wkhost: {args.cls}: {answer.body.decode(errors='replace').strip()}",
              file=sys.stderr)
        return Exit.FAILED
    ids = json.loads(answer.body)["ids"]
    for actor_id in ids:
        print(actor_id)
    if len(ids) == args.limit:
        print(f"wkhost: --limit {args.limit} reached; more ids may follow: "
              f"--after {shlex.quote(ids[-1])}", file=sys.stderr)
    return Exit.OK
