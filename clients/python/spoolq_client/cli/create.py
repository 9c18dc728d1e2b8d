"""``spoolq create QUEUE``: create a queue of any door, with its settings and tags from the start.

``--kind`` names the door's kind of queue (``emodb``, the default; ``dedup``; ``sqs``; ``sqs-fifo``;
``mq``; ``disque``) and QUEUE is the name that door's users know (an SQS FIFO queue's ends in
``.fifo``). The settings flags are ``spoolq settings``'s; every value is checked before the queue
is made, so a refused one (exit 1, the reason on stderr) makes nothing. A queue that exists already
is refused (exit 1, 409 conflict); change its settings with ``spoolq settings``. A new queue
starts from the defaults of its door's own API (an SQS queue keeps its messages 4 days, as
``CreateQueue`` does; a Disque queue's visibility timeout, its jobs' default RETRY, is 300 s). The queue is printed as
``spoolq queues`` lists it (its store name), or as JSON with ``--json``.
"""

from __future__ import annotations

import argparse

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, run_with_client
from spoolq_client.cli.queue_settings import add_setting_flags, setting_changes
from spoolq_client.client import SpoolqClient
from spoolq_client.errors import SpoolqApiError

#: --kind -> (door, FIFO): the kinds of queue, the same words as ``spoolq queues``, the console and the config file
KINDS = {"emodb": ("queue", False), "dedup": ("dedupq", False), "sqs": ("sqs", False), "sqs-fifo": ("sqs", True),
         "mq": ("mq", False), "disque": ("disque", False)}


def _tags(raw: list[str]) -> dict[str, str]:
    tags = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--tag takes KEY=VALUE, got {item[:60]!r}", 2)
        tags[key] = value
    return tags


def run_create(args: argparse.Namespace) -> int:
    door, fifo = KINDS[args.kind]
    if args.region is not None and door != "sqs":
        raise CliError("--region is for SQS queues (--kind sqs or sqs-fifo)", 2)
    if args.content_based_dedup and not fifo:
        raise CliError("--content-based-dedup is for SQS FIFO queues (--kind sqs-fifo)", 2)
    tags = _tags(args.tag or [])

    def no_current() -> None:  # a new queue has no dead-letter queue yet: both halves are needed
        return None

    settings = setting_changes(args, no_current)
    if settings.get("dead_letter") is None:
        settings.pop("dead_letter", None)

    def body(c: SpoolqClient) -> int:
        try:
            created = c.create_queue(args.queue, door=args.kind, region=args.region,
                                     content_based_dedup=args.content_based_dedup, settings=settings, tags=tags)
        except SpoolqApiError as e:
            if e.status == 409:
                raise CliError(f"409 conflict: {e.message}; change its settings with `spoolq settings`") from None
            raise
        if args.json:
            print_json(created)
        else:
            print(f"created {created['store_name']} ({created['kind']})")
        return 0
    return run_with_client(args, body)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help="the name the door's users know (an SQS FIFO queue's ends in .fifo)")
    p.add_argument("--kind", choices=sorted(KINDS), default="emodb",
                   help="whose queue: emodb (/queue/1, the default), dedup (/dedupq/1), sqs, sqs-fifo, mq, disque")
    p.add_argument("--region", help="SQS: the region (default: the service's SQS region)")
    p.add_argument("--content-based-dedup", dest="content_based_dedup", action="store_true",
                   help="SQS FIFO: deduplicate by the body's SHA-256 when a send names no deduplication id")
    p.add_argument("--tag", action="append", metavar="KEY=VALUE", help="a tag (repeat for more)")
    add_setting_flags(p)
    add_connection_flags(p, dedup=False)


CREATE = Command("create", "create a queue of any door, with its settings and tags", _arguments, run_create,
                 examples="""
spoolq create audq --archive on --archive-retention 30d     # an EmoDB queue, archived from the first message
spoolq create orders.fifo --kind sqs-fifo --region eu-west-1 --content-based-dedup \\
    --visibility-timeout 45s --dead-letter-queue sqs:123456789012:eu-west-1:orders-dlq.fifo --max-receives 5
spoolq create builds --kind disque --tag team=ci""")
