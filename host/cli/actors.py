"""`wkhost actors`: a class's actors, filtered by what they published, a page at a time.

The listing reads the host's index only: no actor runs an event for it (host/net/listing.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from textwrap import fill
from typing import Any

from ..storage.attributes import checked
from ..storage.listing import MAX_LIMIT
from .instances import listing_url
from .options import (
    CliError,
    Exit,
    add_server_args,
    checked_target,
    operator_request,
    operator_token,
    with_exit_codes,
)
from .text import TIME_HELP, parse_time, seconds_arg, when

_ACTORS_EPILOG = """\
examples:
  wkhost actors counter                    the ids of class counter's actors
  wkhost actors counter --limit 100        the first 100
  wkhost actors counter --after c42        the ids after c42 (the next page)
  wkhost actors orders --status parked -l  those whose published status is parked, with
                                           their status, time and labels
  wkhost actors orders --status failed --since 2h --count
                                           how many failed in the last two hours
  wkhost actors orders --label region=eu --order newest --json
                                           those labelled region=eu, newest first

Ids come one per line, in order. A full page ends with a line on stderr that says where
the next one begins. --status, --since, --until, --label and --order list only actors
that published attributes (a workflow publishes its state and its labels).

{time_help}"""

# The CLI's words for the listing's orders (storage/listing.py's ORDERS).
ORDERS = {"id": "id", "oldest": "updated", "newest": "-updated"}


def add_actors(sub: Any) -> None:
    a = sub.add_parser("actors", help="list the actors of a class",
                       description="List a class's actors, as the host's index knows them: "
                       "no actor runs for it.",
                       epilog=_ACTORS_EPILOG.format(time_help=fill(TIME_HELP, 88)),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    with_exit_codes(a, "actors")
    a.add_argument("cls", metavar="CLASS", help="the class, e.g. counter")
    a.add_argument("--status", action="append", default=[], metavar="S",
                   help="only actors whose published status is S (repeat for any of them)")
    add_filter_args(a, "those updated")
    add_order_args(a)
    a.add_argument("--limit", type=int, default=1000, metavar="N",
                   help=f"list at most N ids, 1 to {MAX_LIMIT} (default %(default)s)")
    a.add_argument("-l", "--long", action="store_true",
                   help="each actor's status, updated time and labels beside its id")
    a.add_argument("--json", action="store_true", help="the page as JSON")
    add_server_args(a)
    a.set_defaults(run=run_actors)


def add_filter_args(a: argparse.ArgumentParser, subject: str) -> None:
    """--since, --until and --label: the filters on published attributes that `wkhost
    actors` and `workflow list` share (each has its own --status)."""
    a.add_argument("--since", metavar="TIME",
                   help=f"only {subject} at or after TIME: ms since the Unix epoch, ISO "
                        "8601 (UTC unless it gives a zone), or a span back from the "
                        "server's clock (30s, 15m, 2h, 7d)")
    a.add_argument("--until", metavar="TIME", help=f"only {subject} at or before TIME")
    a.add_argument("--label", action="append", default=[], metavar="K=V",
                   help="only those labelled K=V (repeat: all of them)")


def add_order_args(a: argparse.ArgumentParser) -> None:
    """--order, --after and --count, which `wkhost actors` and `workflow list` share."""
    a.add_argument("--order", default="id", choices=list(ORDERS),
                   help="by id (default), or by updated time: oldest or newest first")
    a.add_argument("--after", default="", metavar="CURSOR",
                   help="the page after this one: an id, or what the last page said")
    a.add_argument("--count", action="store_true",
                   help="print only how many match (all pages)")


def filter_params(args: argparse.Namespace) -> dict[str, Any]:
    """The listing's query parameters for --since, --until, --label, --order and
    --after. Raises CliError (bad usage) naming the option that is wrong."""
    since, until = (None if t is None else parse_time(t, f"--{name}")
                    for name, t in (("since", args.since), ("until", args.until)))
    return {"since": since, "until": until, "label": [_label(x) for x in args.label],
            "order": ORDERS[args.order], "after": args.after}


def add_start_labels(p: argparse.ArgumentParser) -> None:
    """`workflow start --label K=V`: the new instance's labels; and `--event NAME
    [--payload JSON]`, an event the start delivers (signal-with-start), or `--update
    NAME [--arg JSON]`, an update (update-with-start)."""
    p.add_argument("--label", action="append", default=[], metavar="K=V",
                   help="a label to list the new instance by (repeat for more); an "
                        "instance that exists keeps its own")
    p.add_argument("--event", metavar="NAME", help="an event the start delivers, whether "
                   "it creates the instance (atomically) or finds it running; a finished "
                   "one refuses it (signal-with-start)")
    p.add_argument("--payload", default="null", help="with --event: its payload, as JSON "
                   "or @FILE (default null)")
    p.add_argument("--update", metavar="NAME", help="an update the start sends, whether it "
                   "creates the instance (atomically) or finds it running; with --wait, "
                   "the answer comes once its handler ends (update-with-start)")
    p.add_argument("--arg", default="null", help="with --update: its argument, as JSON or "
                   "@FILE (default null)")
    p.add_argument("--debounce", type=seconds_arg, metavar="DURATION",
                   help="begin the instance once this long (5s, 1m) has passed with no newer "
                        "debounced start of this id, with the newest --input")
    p.add_argument("--idempotency-key", metavar="KEY", help="the start's Idempotency-Key: "
                   "the same start sent again with it answers as the first did, and "
                   "delivers its --event never again")


def with_start(args: argparse.Namespace, payload: Any, arg: Any) -> dict[str, Any]:
    """The start's `event=` or `update=` from --event or --update (not both: bad usage)."""
    if args.event is not None and args.update is not None:
        raise CliError("give --event or --update, not both")
    key: dict[str, Any] = ({"idempotency_key": args.idempotency_key}
                           if args.idempotency_key else {})
    if args.debounce is not None:
        if not args.debounce > 0:
            raise CliError("--debounce must be a length of time above 0")
        key["debounce_ms"] = round(args.debounce * 1000)
    if args.event is not None:
        return {"event": (args.event, payload), **key}
    # An id of its own, so that --wait can ask again how it stands.
    return key if args.update is None else {"update": (args.update, arg),
                                            "update_id": os.urandom(8).hex(), **key}


def start_labels(items: list[str]) -> dict[str, str]:
    """--label K=V ... as a map, checked against the host's bounds before anything is
    sent (storage/attributes.py). Raises CliError (bad usage)."""
    pairs = [(k, v) for k, _, v in (_label(x).partition("=") for x in items)]
    try:
        checked("-", 0, pairs, None)
    except ValueError as e:
        raise CliError(f"--label: {e}") from None
    return dict(pairs)


def _label(text: str) -> str:
    key, sep, _ = text.partition("=")
    if not sep or not key:
        raise CliError(f"--label: {text!r} is not K=V")
    return text


def fetch_page(server: str, token: str, cls: str, params: dict[str, Any]) -> dict[str, Any]:
    """One page of the host's listing (host/net/listing.py) with these query parameters
    (a list's values repeat the parameter). Raises CliError with the host's refusal."""
    answer = operator_request("GET", listing_url(server, cls, params), token)
    if answer.status != 200:
        raise CliError(f"{cls}: {answer.body.decode(errors='replace').strip()}",
                       Exit.FAILED)
    page: dict[str, Any] = json.loads(answer.body)
    return page


def run_actors(args: argparse.Namespace) -> int:
    checked_target(args.cls)
    if not 1 <= args.limit <= MAX_LIMIT:
        raise CliError(f"--limit takes 1 to {MAX_LIMIT}")
    page = fetch_page(args.server, operator_token(args), args.cls, {
        "status": args.status, **filter_params(args),
        "limit": 1 if args.count else args.limit, "count": 1 if args.count else None})
    if args.count:
        print(page["count"])
    elif args.json:
        print(json.dumps(page))
    else:
        for actor in page["actors"]:
            print(_line(actor) if args.long else actor["id"])
        if page["next"] is not None:
            print(f"wkhost: --limit {args.limit} reached; more may follow: "
                  f"--after {shlex.quote(page['next'])}", file=sys.stderr)
    return Exit.OK


def _line(actor: dict[str, Any]) -> str:
    if actor["status"] is None:
        return f"{actor['id']}\t-"
    labels = " ".join(f"{k}={v}" for k, v in sorted(actor["labels"].items()))
    return "\t".join(x for x in (actor["id"], actor["status"], when(actor["updated_ms"]),
                                 labels) if x)
