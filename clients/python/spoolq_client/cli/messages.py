"""The client commands on messages: ``spoolq send``, ``poll``, ``ack``, ``peek`` and ``tail``.

Bodies (``send``): each argument is one message; ``@path`` reads a file, ``-`` reads standard
input, and no body reads standard input (``--lines``: one message per line). To an EmoDB queue,
text that parses as JSON is sent as that JSON value, anything else as a JSON string (``--string``
forces a string); to another door's queue (SQS, MQ, Disque) the text is sent as it is, with
``--group-id``, ``--dedup-id`` and ``--attribute`` where the queue takes them (an SQS FIFO queue
needs a group id), through the console's API.

A queue is named as users type it (:func:`~spoolq_client.cli.connection.resolve_queue`): the
name of its door, its store name or an SQS queue URL.
Messages are printed one per line, ``ID<tab>PAYLOAD`` (``--json``: a JSON array, or JSON lines for
``tail``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, resolve_queue, run_with_client
from spoolq_client.client import SpoolqClient

QUEUE_HELP = ("the queue: its name (orders, orders.fifo), full name (sqs:123456789012:us-east-1:orders.fifo) "
              "or SQS queue URL; with --dedup an EmoDB dedup queue")
#: the kinds of queue whose door stores JSON values (the others: text as it is)
JSON_KINDS = ("emodb", "dedup")


def print_messages(args: argparse.Namespace, messages: list[Any]) -> None:
    if args.json:
        print_json([{"id": m.id, "payload": m.payload} for m in messages])
        return
    for m in messages:
        print(f"{m.id}\t{json.dumps(m.payload, ensure_ascii=False)}")


def _value(text: str, force_string: bool) -> Any:
    if force_string:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    if source.startswith("@"):
        try:
            with open(source[1:], encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise CliError(f"cannot read {source[1:]}: {e.strerror}", 2) from None
    return source


def _texts(args: argparse.Namespace) -> list[str]:
    """The messages' texts, as given (arguments, files, stdin; ``--lines``: one per line)."""
    texts: list[str] = []
    for source in args.bodies or ["-"]:
        text = _read(source)
        if args.lines:
            texts.extend(line for line in text.splitlines() if line.strip())
        else:
            texts.append(text.rstrip("\n") if source == "-" or source.startswith("@") else text)
    return texts


def _values(texts: list[str], force_string: bool) -> list[Any]:
    values = [_value(t, force_string) for t in texts]
    if any(v is None for v in values):
        raise CliError("null is not a valid message", 2)
    return values


def _attributes(raw: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in raw or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--attribute takes NAME=VALUE, got {item[:60]!r}", 2)
        out[key] = value
    return out


def run_send(args: argparse.Namespace) -> int:
    texts = _texts(args)
    if not texts:
        raise CliError("no message to send (empty input)", 2)
    attributes = _attributes(args.attribute)
    per_message = bool(args.group_id or args.dedup_id or attributes)

    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, dedup=args.dedup)
        kind = "dedup" if args.dedup else _kind(c, queue)
        if kind is None:  # a send makes an EmoDB queue
            _check_new_emodb_name(queue)
            kind = "emodb"
        if kind in JSON_KINDS and not per_message:
            _send_emodb(c, queue, _values(texts, args.string), args)
        else:
            _send_each(c, queue, kind, texts, attributes, args)
        if args.json:
            print_json({"queue": queue, "sent": len(texts)})
        else:
            print(f"sent {len(texts)} message{'s' if len(texts) != 1 else ''} to {queue}")
        return 0
    return run_with_client(args, body)


def _kind(c: SpoolqClient, store_name: str) -> str | None:
    """The kind of the queue (emodb, sqs-fifo, ...); None when it does not exist yet."""
    for match in c.resolve(store_name):
        if match["store_name"] == store_name:
            return str(match["kind"])
    return None


#: EmoDB's queue names: 1-255 of a-z 0-9 - . : @ _, not a single leading _, not . or ..
_EMODB_NAME = re.compile(r"^(?!_[^_])(?!\.{1,2}$)[a-z0-9\-.:@_]{1,255}$")


def _check_new_emodb_name(name: str) -> None:
    """A send to a queue that does not exist makes an EmoDB queue: refuse a name EmoDB refuses."""
    if not _EMODB_NAME.match(name):
        raise CliError(f"no queue {name!r}, and a send makes an EmoDB queue, whose names are 1-255 characters of "
                       "a-z 0-9 - . : @ _ (lowercase); for another door's queue, `spoolq create "
                       f"{name} --kind sqs` (or mq, disque) first", 2)


def _send_emodb(c: SpoolqClient, queue: str, values: list[Any], args: argparse.Namespace) -> None:
    opts: dict[str, Any] = {"dedup": args.dedup, "delay": args.delay, "ttl": args.ttl,
                            "at_most_once": args.at_most_once}
    for i in range(0, len(values), args.batch):
        chunk = values[i:i + args.batch]
        if len(chunk) == 1:
            c.send(queue, chunk[0], **opts)
        else:
            c.send_batch(queue, chunk, **opts)


def _send_each(c: SpoolqClient, queue: str, kind: str, texts: list[str], attributes: dict[str, str],
               args: argparse.Namespace) -> None:
    """One message at a time through the console's API: any door's queue, with ids and attributes."""
    if args.ttl is not None or args.at_most_once:
        raise CliError("--ttl and --at-most-once are for EmoDB queues; send without them", 2)
    if kind == "sqs-fifo" and not args.group_id:
        raise CliError(f"{args.queue} is an SQS FIFO queue: every message needs --group-id (and --dedup-id, "
                       "unless the queue deduplicates by content)", 2)
    if kind != "sqs-fifo" and args.dedup_id:
        raise CliError("--dedup-id is for SQS FIFO queues", 2)
    delay = None if args.delay is None else int(args.delay)
    for text in texts:
        if kind in JSON_KINDS:  # the EmoDB door's JSON: text that is not JSON goes as a JSON string
            text = json.dumps(_value(text, args.string), ensure_ascii=False)
        c.send_message(queue, text, text=kind not in JSON_KINDS, group_id=args.group_id, dedup_id=args.dedup_id,
                       attributes=attributes or None, delay=delay)


def _send_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP + "; created on first send")
    p.add_argument("bodies", nargs="*", metavar="BODY",
                   help="a message (JSON, or text sent as a JSON string); @path reads a file; - or none: stdin")
    p.add_argument("--lines", action="store_true", help="one message per line of the input")
    p.add_argument("--string", action="store_true", help="send the text as a JSON string even if it is JSON")
    p.add_argument("--delay", type=float, help="seconds before the messages become visible")
    p.add_argument("--ttl", type=float, help="drop the messages if not consumed within this many seconds")
    p.add_argument("--at-most-once", dest="at_most_once", action="store_true",
                   help="deliver each message at most once (never redelivered after a claim expires)")
    p.add_argument("--group-id", dest="group_id", metavar="ID", help="SQS FIFO queues: the message group")
    p.add_argument("--dedup-id", dest="dedup_id", metavar="ID",
                   help="SQS FIFO queues: the deduplication id (default: the body's SHA-256 with content-based "
                        "deduplication, else a new one)")
    p.add_argument("--attribute", action="append", metavar="NAME=VALUE",
                   help="a message attribute (a String attribute to SQS consumers; repeat for more)")
    p.add_argument("--batch", type=int, default=500, help="messages per sendbatch call (default 500)")
    add_connection_flags(p)


SEND = Command("send", "send messages (arguments, @file or stdin)", _send_arguments, run_send, examples="""
spoolq send orders '{"id": 7}' '{"id": 8}'      # two JSON messages
spoolq send orders @order.json                  # the body from a file
tail -f events.log | spoolq send logs --lines   # one message per line of stdin
spoolq send orders.fifo '{"id": 7}' --group-id customer-42 --dedup-id order-7
spoolq send jobs 'resize img-1' --attribute priority=high""")


def run_poll(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, dedup=args.dedup)
        messages = c.poll(queue, limit=args.limit, ttl=args.ttl, wait=args.wait, dedup=args.dedup)
        if args.ack and messages:
            c.ack(queue, [m.id for m in messages], dedup=args.dedup)
        print_messages(args, messages)
        return 0
    return run_with_client(args, body)


def _poll_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("--limit", type=int, default=10, help="most messages to claim (1-1000, default 10)")
    p.add_argument("--ttl", type=int, default=None,
                   help="claim seconds (0-3600; default: the queue's visibility timeout)")
    p.add_argument("--wait", type=float, default=None, help="long-poll up to this many seconds (0-20)")
    p.add_argument("--ack", action="store_true", help="acknowledge the printed messages at once")
    add_connection_flags(p)


POLL = Command("poll", "claim messages and print them", _poll_arguments, run_poll, examples="""
spoolq poll orders --limit 5 --ttl 60     # claim up to 5 for a minute
spoolq poll orders --wait 20 --ack --json # long-poll, print as JSON, acknowledge at once""")


def run_ack(args: argparse.Namespace) -> int:
    ids = list(args.ids) or sys.stdin.read().split()
    if not ids:
        raise CliError("no message ids given (as arguments or on stdin)", 2)

    def body(c: SpoolqClient) -> int:
        c.ack(resolve_queue(c, args.queue, dedup=args.dedup), ids, dedup=args.dedup)
        if args.json:
            print_json({"queue": args.queue, "acked": len(ids)})
        else:
            print(f"acknowledged {len(ids)} message{'s' if len(ids) != 1 else ''} of {args.queue}")
        return 0
    return run_with_client(args, body)


def _ack_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("ids", nargs="*", metavar="ID", help="message ids (40 hex digits); none: read them from stdin")
    add_connection_flags(p)


ACK = Command("ack", "acknowledge messages by id (arguments or stdin)", _ack_arguments, run_ack, examples="""
spoolq ack orders 01a2018725a40bbfd16a2256cf1510d25ea02fb6
spoolq poll orders --json | jq -r '.[].id' | spoolq ack orders""")


def run_peek(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        print_messages(args, c.peek(resolve_queue(c, args.queue, dedup=args.dedup), limit=args.limit,
                                    dedup=args.dedup))
        return 0
    return run_with_client(args, body)


def _peek_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("--limit", type=int, default=10, help="most messages to print (1-5000, default 10)")
    add_connection_flags(p)


PEEK = Command("peek", "print messages without claiming them", _peek_arguments, run_peek, examples="""
spoolq peek orders --limit 3""")


def run_tail(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        seen: dict[str, None] = {}
        printed = 0
        deadline = None if args.timeout_after is None else time.monotonic() + args.timeout_after
        queue = resolve_queue(c, args.queue, dedup=args.dedup)
        while True:
            for m in c.peek(queue, limit=args.limit, dedup=args.dedup):
                if m.id in seen:
                    continue
                seen[m.id] = None
                if len(seen) > 100_000:
                    seen.pop(next(iter(seen)))
                if args.json:
                    print_json({"id": m.id, "payload": m.payload})
                else:
                    print(f"{m.id}\t{json.dumps(m.payload, ensure_ascii=False)}")
                sys.stdout.flush()
                printed += 1
                if args.count is not None and printed >= args.count:
                    return 0
            if deadline is not None and time.monotonic() >= deadline:
                return 0
            time.sleep(args.interval)
    try:
        return run_with_client(args, body)
    except KeyboardInterrupt:
        return 0


def _tail_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("--limit", type=int, default=1000, help="peek window: the oldest N ready messages")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between peeks (default 1)")
    p.add_argument("--count", type=int, default=None, help="exit after printing this many messages")
    p.add_argument("--timeout-after", dest="timeout_after", type=float, default=None,
                   help="exit after this many seconds")
    add_connection_flags(p)


TAIL = Command("tail", "follow a queue without consuming (peek polling)", _tail_arguments, run_tail, examples="""
spoolq tail orders                         # until Ctrl-C
spoolq tail orders --count 10 --json       # the first 10, as JSON lines""")
