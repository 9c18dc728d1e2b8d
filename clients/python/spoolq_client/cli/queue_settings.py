"""``spoolq settings QUEUE``: print a queue's settings, or change some of them.

Without a change flag it prints every setting (``--json``: the settings API's JSON). Each change
flag names one setting; durations take a unit (``90s``, ``15m``, ``12h``, ``30d``, ``2w``; a bare
number is seconds). All the flags of one call are one change: the server checks every value before
it writes any, so a refused change (exit 1, the reason on stderr) leaves the queue as it was.
It works for any queue, whichever door made it: name it as its door does (``orders.fifo``), as
``spoolq queues`` lists it (the store name, e.g. ``sqs:123456789012:us-east-1:Orders``) or by its
SQS queue URL, with ``--dedup`` for a dedup queue. A queue that does not exist yet is made by
``--create`` (or ``spoolq create``), so that a setting such as ``--archive on`` holds from its
first message.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, resolve_queue, run_with_client
from spoolq_client.client import SpoolqClient
from spoolq_client.errors import NotFound, SpoolqApiError

#: flag dest -> settings name, for the duration flags
_DURATIONS = {"visibility_timeout": "visibility timeout", "delay": "delay", "retention": "retention",
              "receive_wait": "receive wait", "archive_retention": "archive retention"}


#: a duration flag's value: seconds, or a number with a unit
_DURATION = re.compile(r"^\s*([0-9]+)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 7 * 86_400}


def parse_duration(text: str, name: str) -> int:
    """Seconds of ``90``, ``90s``, ``15m``, ``12h``, ``30d`` or ``2w`` (:class:`CliError` otherwise).

    A twin of the server's ``spoolq.queue_settings.parse_duration`` (and :func:`format_duration` of
    its ``format_duration``): the client distribution installs without the server and the server
    imports nothing of the client, so each keeps its copy, raising its own error;
    ``tests/cli/test_twin_helpers.py`` holds the two to the same answers."""
    m = _DURATION.match(text)
    if m is None:
        raise CliError(f"{name} must be a number of seconds or a number with s, m, h, d or w "
                       f"(30d), got {text[:40]!r}", 2)
    return int(m.group(1)) * _UNITS[m.group(2) or "s"]


def format_duration(seconds: float) -> str:
    """``2592000`` -> ``30d``; ``90`` -> ``90s``: the largest unit that divides it."""
    whole = int(seconds)
    if whole != seconds or whole == 0:
        return f"{seconds:g}s"
    for unit in ("w", "d", "h", "m"):
        if whole % _UNITS[unit] == 0:
            return f"{whole // _UNITS[unit]}{unit}"
    return f"{whole}s"


def setting_changes(args: argparse.Namespace, current: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """The settings JSON of the change the flags ask for (``current``: the settings now, fetched only
    when a dead-letter flag needs the half the user did not give)."""
    out: dict[str, Any] = {}
    for dest, label in _DURATIONS.items():
        raw = getattr(args, dest)
        if raw is not None:
            out[dest] = parse_duration(raw, label)
    if args.max_message_bytes is not None:
        out["max_message_bytes"] = args.max_message_bytes
    if args.archive is not None:
        out["archive"] = args.archive in ("on", "true", "yes")
    if args.no_dead_letter:
        if args.dead_letter_queue is not None or args.max_receives is not None:
            raise CliError("--no-dead-letter cannot be combined with --dead-letter-queue or --max-receives", 2)
        out["dead_letter"] = None
    elif args.dead_letter_queue is not None or args.max_receives is not None:
        now = current()
        queue = args.dead_letter_queue or (now["queue"] if now else None)
        count = args.max_receives if args.max_receives is not None else (now["max_receives"] if now else None)
        if queue is None:
            raise CliError("this queue has no dead-letter queue yet: give --dead-letter-queue too", 2)
        if count is None:
            raise CliError("this queue has no dead-letter queue yet: give --max-receives too", 2)
        out["dead_letter"] = {"queue": queue, "max_receives": count}
    return out


def _print(settings: dict[str, Any]) -> None:
    dead = settings["dead_letter"]
    rows = [
        ("queue", settings["queue"]),
        ("kind", settings["kind"]),
        ("visibility timeout", format_duration(settings["visibility_timeout"])),
        ("delay", format_duration(settings["delay"])),
        ("retention", format_duration(settings["retention"])),
        ("receive wait", format_duration(settings["receive_wait"])),
        ("max message bytes", str(settings["max_message_bytes"])),
        ("dead-letter queue", f"{dead['queue']} (after {dead['max_receives']} receives)" if dead else "none"),
        ("archive", "on" if settings["archive"] else "off"),
        ("archive retention", format_duration(settings["archive_retention"])),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def run_settings(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, dedup=args.dedup)

        def current() -> dict[str, Any] | None:
            dead = c.settings(queue, dedup=args.dedup).to_dict().get("dead_letter")
            return dead if isinstance(dead, dict) else None

        changes = setting_changes(args, current)
        if args.create and not _exists(c, queue, args.dedup):
            created = c.create_queue(**creation(queue, args.dedup), settings=changes)
            settings = c.settings(created["store_name"].removeprefix("__dedupq:"), dedup=args.dedup).to_dict()
        else:
            try:
                settings = (c.update_settings(queue, changes, dedup=args.dedup) if changes
                            else c.settings(queue, dedup=args.dedup)).to_dict()
            except NotFound as e:
                raise CliError(f"404 not found: {e.message}: `spoolq settings {args.queue} --create ...` makes it with "
                               f"these settings (or `spoolq create {args.queue} --kind KIND ...`)") from None
        if args.json:
            print_json(settings)
        else:
            _print(settings)
        return 0
    return run_with_client(args, body)


def _exists(c: SpoolqClient, queue: str, dedup: bool) -> bool:
    try:
        c.settings(queue, dedup=dedup)
    except SpoolqApiError as e:
        if e.status == 404:
            return False
        raise
    return True


def creation(store_name: str, dedup: bool) -> dict[str, Any]:
    """The door, name and region of the queue a store name (as `spoolq queues` lists it) stands for."""
    if dedup:
        return {"door": "dedupq", "name": store_name}
    for prefix, door in (("mq:", "mq"), ("disque:", "disque"), ("__dedupq:", "dedupq")):
        if store_name.startswith(prefix):
            return {"door": door, "name": store_name[len(prefix):]}
    parts = store_name.split(":", 3)
    if store_name.startswith("sqs:") and len(parts) == 4:
        return {"door": "sqs", "name": parts[3], "region": parts[2], "fifo": parts[3].endswith(".fifo")}
    return {"door": "queue", "name": store_name}


def add_setting_flags(p: argparse.ArgumentParser) -> None:
    """The flags of the settings a change (or a new queue) names."""
    p.add_argument("--visibility-timeout", dest="visibility_timeout", metavar="DURATION",
                   help="how long a delivery stays claimed when the poll names no time (e.g. 30s, 5m)")
    p.add_argument("--delay", metavar="DURATION", help="delay of new messages that name none")
    p.add_argument("--retention", metavar="DURATION", help="drop unconsumed messages older than this (e.g. 4d)")
    p.add_argument("--receive-wait", dest="receive_wait", metavar="DURATION",
                   help="long-poll wait of polls that name none (0-20s)")
    p.add_argument("--max-message-bytes", dest="max_message_bytes", type=int, metavar="N",
                   help="largest message body in bytes")
    p.add_argument("--dead-letter-queue", dest="dead_letter_queue", metavar="QUEUE",
                   help="move a message there once it was received --max-receives times (the queue must exist)")
    p.add_argument("--max-receives", dest="max_receives", type=int, metavar="N",
                   help="deliveries before a message goes to the dead-letter queue")
    p.add_argument("--no-dead-letter", dest="no_dead_letter", action="store_true",
                   help="remove the dead-letter queue")
    p.add_argument("--archive", choices=["on", "off"], help="keep acknowledged messages for `spoolq pipeline audit`")
    p.add_argument("--archive-retention", dest="archive_retention", metavar="DURATION",
                   help="how long archived messages are kept (e.g. 30d)")


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help="the queue, as `spoolq queues` lists it (any door's); with --dedup a dedup queue")
    add_setting_flags(p)
    p.add_argument("--create", action="store_true",
                   help="a queue that does not exist yet is created with these settings (its door from its "
                        "name: orders, mq:jobs, disque:builds, sqs:123456789012:us-east-1:Orders; --dedup)")
    add_connection_flags(p)



SETTINGS = Command("settings", "print a queue's settings, or change some of them", _arguments, run_settings, examples="""
spoolq settings orders                                   # every setting
spoolq settings orders --archive on --archive-retention 30d
spoolq settings orders --dead-letter-queue orders-dlq --max-receives 5
spoolq settings audq --create --archive on              # archive on from the first message
spoolq settings sqs:123456789012:us-east-1:Orders --visibility-timeout 2m --json""")
