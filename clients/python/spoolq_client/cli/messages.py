"""The client commands on messages: ``spoolq send``, ``poll``, ``ack``, ``peek`` and ``tail``.

Bodies (``send``): each argument is one message; ``@path`` reads a file, ``-`` reads standard
input, and no body reads standard input (``--lines``: one message per line). Text that parses
as JSON is sent as that JSON value, anything else as a JSON string (``--string`` forces a string).
Messages are printed one per line, ``ID<tab>PAYLOAD`` (``--json``: a JSON array, or JSON lines for
``tail``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, run_with_client
from spoolq_client.client import SpoolqClient

QUEUE_HELP = "queue name (the /queue/1 name, or the /dedupq/1 name with --dedup)"


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


def _bodies(args: argparse.Namespace) -> list[Any]:
    sources = args.bodies or ["-"]
    texts: list[str] = []
    for source in sources:
        text = _read(source)
        if args.lines:
            texts.extend(line for line in text.splitlines() if line.strip())
        else:
            texts.append(text.rstrip("\n") if source == "-" or source.startswith("@") else text)
    values = [_value(t, args.string) for t in texts]
    if any(v is None for v in values):
        raise CliError("null is not a valid message", 2)
    return values


def run_send(args: argparse.Namespace) -> int:
    values = _bodies(args)
    if not values:
        raise CliError("no message to send (empty input)", 2)

    def body(c: SpoolqClient) -> int:
        opts: dict[str, Any] = {"dedup": args.dedup, "delay": args.delay, "ttl": args.ttl,
                                "at_most_once": args.at_most_once}
        for i in range(0, len(values), args.batch):
            chunk = values[i:i + args.batch]
            if len(chunk) == 1:
                c.send(args.queue, chunk[0], **opts)
            else:
                c.send_batch(args.queue, chunk, **opts)
        if args.json:
            print_json({"queue": args.queue, "sent": len(values)})
        else:
            print(f"sent {len(values)} message{'s' if len(values) != 1 else ''} to {args.queue}")
        return 0
    return run_with_client(args, body)


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
    p.add_argument("--batch", type=int, default=500, help="messages per sendbatch call (default 500)")
    add_connection_flags(p)


SEND = Command("send", "send messages (arguments, @file or stdin)", _send_arguments, run_send, examples="""
spoolq send orders '{"id": 7}' '{"id": 8}'      # two JSON messages
spoolq send orders @order.json                  # the body from a file
tail -f events.log | spoolq send logs --lines   # one message per line of stdin""")


def run_poll(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        messages = c.poll(args.queue, limit=args.limit, ttl=args.ttl, wait=args.wait, dedup=args.dedup)
        if args.ack and messages:
            c.ack(args.queue, [m.id for m in messages], dedup=args.dedup)
        print_messages(args, messages)
        return 0
    return run_with_client(args, body)


def _poll_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("--limit", type=int, default=10, help="most messages to claim (1-1000, default 10)")
    p.add_argument("--ttl", type=int, default=30, help="claim seconds (0-3600, default 30)")
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
        c.ack(args.queue, ids, dedup=args.dedup)
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
        print_messages(args, c.peek(args.queue, limit=args.limit, dedup=args.dedup))
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
        while True:
            for m in c.peek(args.queue, limit=args.limit, dedup=args.dedup):
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
