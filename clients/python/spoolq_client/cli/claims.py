"""The client commands on claimed messages: ``spoolq release``, ``nack``, ``visibility`` and
``delete-message``, for a queue of any door (through the console's API).

Messages are named by the ids ``spoolq poll`` prints (or receipts), as arguments or one per line on
standard input. **release** makes them visible again now (``--all``: every claim of the queue, as
EmoDB's unclaimAll); **nack** does the same and counts a negative acknowledgement, as Disque's
``NACK``; **visibility** sets how long their claims last from now, as SQS's
``ChangeMessageVisibility`` (0: visible now). Each prints how many it changed; a message whose claim
was no longer held (acknowledged, expired, received again) is counted as not changed (exit 0).
**delete-message** deletes one message by id wherever it is, claimed or not (a Disque job id on a
Disque queue).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, resolve_queue, run_with_client
from spoolq_client.cli.messages import QUEUE_HELP
from spoolq_client.cli.queue_settings import parse_duration
from spoolq_client.client import SpoolqClient


def _ids(args: argparse.Namespace) -> list[str]:
    ids = list(args.ids) or sys.stdin.read().split()
    if not ids:
        raise CliError("no message ids given (as arguments or on stdin)", 2)
    return ids


def _report(args: argparse.Namespace, queue: str, verb: str, done: list[bool]) -> int:
    changed = sum(done)
    if args.json:
        print_json({"queue": queue, verb: changed, "not_held": len(done) - changed})
    else:
        gone = f" ({len(done) - changed} no longer claimed)" if changed < len(done) else ""
        print(f"{verb} {changed} message{'s' if changed != 1 else ''} of {queue}{gone}")
    return 0


def _each(verb: str, op: Callable[[SpoolqClient, str, list[str]], list[bool]]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if getattr(args, "all", False):
            if args.ids:
                raise CliError("--all releases every claim: give no ids with it", 2)

            def everything(c: SpoolqClient) -> int:
                queue = resolve_queue(c, args.queue, emodb_door=False)
                c.unclaim_all(queue)
                if args.json:
                    print_json({"queue": queue, "released": "all"})
                else:
                    print(f"released every claim of {queue}")
                return 0
            return run_with_client(args, everything)
        ids = _ids(args)

        def body(c: SpoolqClient) -> int:
            queue = resolve_queue(c, args.queue, emodb_door=False)
            return _report(args, queue, verb, op(c, queue, ids))
        return run_with_client(args, body)
    return run


def _ids_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP.split("; with --dedup")[0])
    p.add_argument("ids", nargs="*", metavar="ID", help="message ids (as `spoolq poll` prints them) or receipts; "
                                                        "none: read them from stdin")


def _release_arguments(p: argparse.ArgumentParser) -> None:
    _ids_arguments(p)
    p.add_argument("--all", action="store_true", help="release every claim of the queue")
    add_connection_flags(p, dedup=False)


RELEASE = Command("release", "make claimed messages visible again now (or every claim: --all)", _release_arguments,
                  _each("released", lambda c, q, ids: c.release_receipts(q, ids)), examples="""
spoolq release orders 01a2018725a40bbfd16a2256cf1510d25ea02fb6
spoolq poll orders --json | jq -r '.[].id' | spoolq release orders
spoolq release orders --all           # every claim, as EmoDB's unclaimAll""")


def _nack_arguments(p: argparse.ArgumentParser) -> None:
    _ids_arguments(p)
    add_connection_flags(p, dedup=False)


NACK = Command("nack", "give claimed messages back as failed (visible now, nack count up)", _nack_arguments,
               _each("nacked", lambda c, q, ids: c.nack(q, ids)), examples="""
spoolq nack builds 01a2018725a40bbfd16a2256cf1510d25ea02fb6""")


def _visibility_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP.split("; with --dedup")[0])
    p.add_argument("duration", metavar="DURATION", help="how long the claims last from now (90s, 5m; 0: visible now)")
    p.add_argument("ids", nargs="*", metavar="ID", help="message ids or receipts; none: read them from stdin")
    add_connection_flags(p, dedup=False)


def _run_visibility(args: argparse.Namespace) -> int:
    seconds = parse_duration(args.duration, "the visibility timeout")
    return _each("changed", lambda c, q, ids: c.change_visibility(q, ids, seconds))(args)


VISIBILITY = Command("visibility", "set how long claimed messages stay claimed from now", _visibility_arguments,
                     _run_visibility, examples="""
spoolq visibility orders 10m 01a2018725a40bbfd16a2256cf1510d25ea02fb6   # ten more minutes
spoolq visibility orders 0 01a2018725a40bbfd16a2256cf1510d25ea02fb6     # visible again now""")


def _run_delete_message(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, emodb_door=False)
        c.delete_message(queue, args.id)
        if args.json:
            print_json({"queue": queue, "deleted": args.id})
        else:
            print(f"deleted message {args.id} of {queue}")
        return 0
    return run_with_client(args, body)


def _delete_message_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP.split("; with --dedup")[0])
    p.add_argument("id", metavar="ID", help="the message id (a Disque job id on a Disque queue)")
    add_connection_flags(p, dedup=False)


DELETE_MESSAGE = Command("delete-message", "delete one message by id, claimed or not", _delete_message_arguments,
                         _run_delete_message, examples="""
spoolq delete-message orders 01a2018725a40bbfd16a2256cf1510d25ea02fb6""")
