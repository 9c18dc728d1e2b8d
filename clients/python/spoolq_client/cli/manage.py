"""The client commands that manage queues and look at the service, as the console does:
``spoolq delete``, ``show``, ``redrive``, ``moves``, ``whoami``, ``node`` (the console's server page) and ``rates``.

Each prints a table for people and JSON with ``--json`` (the console API's answer). ``delete``
asks ``--yes`` (or ``--if-empty``, which deletes a queue only if it holds no message at that
moment); a queue is named as users type it (its door's name, its store name or an SQS queue URL).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, resolve_queue, run_with_client
from spoolq_client.cli.messages import QUEUE_HELP
from spoolq_client.cli.queue_settings import format_duration
from spoolq_client.client import SpoolqClient

ANY_QUEUE = QUEUE_HELP.split("; with --dedup")[0]


def print_rows(rows: Sequence[tuple[str, Any]]) -> None:
    """``key  value`` lines, the keys aligned."""
    width = max((len(k) for k, _ in rows), default=0)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]], empty: str) -> None:
    if not rows:
        print(empty)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*header, box=None, header_style="bold")
    for row in rows:
        table.add_row(*(str(v) for v in row))
    Console(width=200).print(table)


# --- delete ------------------------------------------------------------------------------------


def _run_delete(args: argparse.Namespace) -> int:
    if not (args.yes or args.if_empty):
        raise CliError(f"delete removes {args.queue} and every message in it: add --yes to confirm "
                       "(or --if-empty to delete it only if it holds none)", 2)

    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, emodb_door=False)
        if not any(m["store_name"] == queue for m in c.resolve(queue)):
            raise CliError(f"queue {args.queue} does not exist: nothing to delete (see `spoolq queues`)")
        out = c.delete_queue(queue, if_empty=args.if_empty)
        if args.json:
            print_json({"queue": queue, **out})
        elif out["deleted"]:
            print(f"deleted {queue}")
        elif out["not_empty"]:
            print(f"kept {queue}: it holds messages")
        else:
            print(f"{queue} was deleted meanwhile")
        return 0 if out["deleted"] or out["missing"] else 1
    return run_with_client(args, body)


def _delete_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=ANY_QUEUE)
    p.add_argument("--yes", action="store_true", help="confirm (required: the queue and its messages are gone)")
    p.add_argument("--if-empty", dest="if_empty", action="store_true",
                   help="delete it only if it holds no message (exit 1 when it does)")
    add_connection_flags(p, dedup=False)


DELETE = Command("delete", "delete a queue and its messages", _delete_arguments, _run_delete, examples="""
spoolq delete orders-old --yes
spoolq delete orders.fifo --if-empty""")


# --- show --------------------------------------------------------------------------------------


def _run_show(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        q = c.queue_info(resolve_queue(c, args.queue, emodb_door=False))
        if args.json:
            print_json(q)
            return 0
        s, dead, consumers = q["settings"], q["dead_letter"], q["consumers"]
        rows: list[tuple[str, Any]] = [
            ("queue", q["store_name"]), ("kind", q["kind"]), ("name", q["name"]),
            ("ready", q["ready"] if q["exact"] else f"~{q['ready']}"), ("claimed", q["claimed"]),
            ("delayed", q["delayed"]), ("oldest", format_duration(round(q["oldest_age"]))),
            ("visibility timeout", format_duration(s["visibility_timeout"])),
            ("retention", format_duration(s["retention"])),
            ("dead-letter queue", f"{dead['queue']} (after {dead['max_receives']} receives)" if dead else "none"),
            ("dead-letter queue of", ", ".join(q["dead_letter_sources"]) or "none"),
            ("consumers waiting", consumers["waiting"]),
            ("sent / delivered / acked", " / ".join(f"{q['totals'][k]:g}" for k in ("send", "poll", "ack"))),
            ("tags", ", ".join(f"{k}={v}" for k, v in sorted(q["tags"].items())) or "none"),
            ("moves", ", ".join(f"{m['ref']} {m['state']}" for m in q["moves"]) or "none")]
        print_rows(rows)
        return 0
    return run_with_client(args, body)


def _show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=ANY_QUEUE)
    add_connection_flags(p, dedup=False)


SHOW = Command("show", "one queue: kind, counts, settings, dead-letter links, consumers, tags, moves",
               _show_arguments, _run_show, examples="""
spoolq show orders
spoolq show orders.fifo --json""")


# --- redrive and moves -------------------------------------------------------------------------


def _print_move(args: argparse.Namespace, move: dict[str, Any]) -> None:
    if args.json:
        print_json(move)
    else:
        print(f"move {move['ref']} {move['source']} -> {move['destination']}: {move['state']} "
              f"({move['moved']} moved)")


def _run_redrive(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, emodb_door=False)
        to = resolve_queue(c, args.to, emodb_door=False) if args.to else None
        _print_move(args, c.start_move(queue, to, redrive=True, max_per_second=args.max_per_second))
        return 0
    return run_with_client(args, body)


def _redrive_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help="the dead-letter queue")
    p.add_argument("--to", help="where the messages go (default: the one queue it is the dead-letter queue of)")
    p.add_argument("--max-per-second", dest="max_per_second", type=int, help="move at most this many a second")
    add_connection_flags(p, dedup=False)


REDRIVE = Command("redrive", "move a dead-letter queue's messages back to its source queue", _redrive_arguments,
                  _run_redrive, examples="""
spoolq redrive orders-dlq
spoolq redrive orders-dlq --to orders --max-per-second 100""")


def _run_moves(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        if args.cancel:
            _print_move(args, c.cancel_move(args.cancel))
            return 0
        moves = c.overview()["moves"]
        if args.json:
            print_json(moves)
            return 0
        rows = [(m["ref"], m["source"], m["destination"], m["state"], m["moved"], m["remaining"],
                 time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m["started_at"]))) for m in moves]
        print_table(("move", "from", "to", "state", "moved", "left", "started"), rows, "(no moves)")
        return 0
    return run_with_client(args, body)


def _moves_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cancel", metavar="MOVE", help="cancel this move (its id, as listed)")
    add_connection_flags(p, dedup=False)


MOVES = Command("moves", "list the moves (with their progress), or cancel one", _moves_arguments, _run_moves,
                examples="""
spoolq moves
spoolq moves --cancel ORSXG5BAMFXGIIDNN5ZGKIDUMV4HIIDUN4QGEZJAMJQXGZJTGI""")


# --- the service -------------------------------------------------------------------------------


def _run_whoami(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        who = c.whoami()
        if args.json:
            print_json(who)
        else:
            print_rows([("key", who["principal"]), ("service", "open (no API keys)" if who["open"] else "keys required"),
                        ("version", who["version"]), ("node", who["node"])])
        return 0
    return run_with_client(args, body)


def _connection_only(p: argparse.ArgumentParser) -> None:
    add_connection_flags(p, dedup=False)


WHOAMI = Command("whoami", "who the API key is, and whether the service asks for keys", _connection_only,
                 _run_whoami, examples="""
spoolq whoami""")


def _run_node(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        s = c.node()
        if args.json:
            print_json(s)
            return 0
        free = "unknown" if s["free_bytes"] is None else f"{s['free_bytes'] / 2**30:.1f} GiB"
        avg = s["flush_seconds_avg"]
        print_rows([("version", s["version"]), ("node", s["node"]), ("root", s["root"]), ("free", free),
                    ("durability", f"every send flushed ({s['flush']})" if s["fsync"] else "no flush (fsync never)"),
                    ("flushes", f"{s['flushes']:g}"), ("mean flush", "-" if avg is None else f"{avg * 1000:.1f} ms"),
                    ("workers", f"{s['workers']} x {s['threads']} threads"), ("queues", s["queues"]),
                    ("long polls waiting", f"{s['long_polls_waiting']:g}")])
        return 0
    return run_with_client(args, body)


NODE = Command("node", "the node: version, data directory, free space, flush, workers", _connection_only,
                 _run_node, examples="""
spoolq node""")


def _run_rates(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, emodb_door=False) if args.queue else None
        r = c.rates(window=args.window, queue=queue)
        if args.json:
            print_json(r)
            return 0

        def mean(points: list[float | None]) -> str:
            seen = [p for p in points if p is not None]
            return f"{sum(seen) / len(seen):.2f}" if seen else "-"
        rows = [(name, mean(q["send"]), mean(q["poll"]), mean(q["ack"])) for name, q in sorted(r["queues"].items())]
        print_table(("queue", "sent/s", "delivered/s", "acked/s"), rows,
                    f"(no queue moved in the last {format_duration(args.window)})")
        return 0
    return run_with_client(args, body)


def _rates_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", nargs="?", help="one queue (default: every queue that moved)")
    p.add_argument("--window", type=int, default=600, help="seconds of history, 60-3600 (default 600)")
    add_connection_flags(p, dedup=False)


RATES = Command("rates", "messages per second of each queue over the last minutes", _rates_arguments, _run_rates,
                examples="""
spoolq rates
spoolq rates orders --window 3600 --json""")
