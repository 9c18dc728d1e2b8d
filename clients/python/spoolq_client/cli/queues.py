"""The client commands on queues: ``spoolq size``, ``purge``, ``move`` (with its progress) and ``queues``
(the kinds as ``spoolq create --kind`` names them: emodb, dedup, sqs, sqs-fifo, mq, disque)."""

from __future__ import annotations

import argparse
import sys
import time

from spoolq_client.cli.command import CliError, Command
from spoolq_client.cli.connection import add_connection_flags, print_json, resolve_queue, run_with_client
from spoolq_client.cli.messages import QUEUE_HELP
from spoolq_client.client import SpoolqClient


def run_size(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, dedup=args.dedup)
        n = c.size(queue, limit=args.limit, dedup=args.dedup)
        if args.json:
            print_json({"queue": queue, "size": n, "claimed": c.claim_count(queue, dedup=args.dedup)})
        else:
            print(n)
        return 0
    return run_with_client(args, body)


def _size_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("--limit", type=int, default=None, help="count exactly up to this, estimate beyond")
    add_connection_flags(p)


SIZE = Command("size", "print the number of messages", _size_arguments, run_size, examples="""
spoolq size orders
spoolq size orders --json        # {"queue": ..., "size": ..., "claimed": ...}""")


def run_purge(args: argparse.Namespace) -> int:
    if not args.yes:
        raise CliError(f"purge deletes every message of {args.queue}: add --yes to confirm", 2)

    def body(c: SpoolqClient) -> int:
        queue = resolve_queue(c, args.queue, dedup=args.dedup)
        if not _queue_exists(c, queue, args.dedup):
            raise CliError(f"queue {args.queue} does not exist: nothing to purge "
                           "(see `spoolq queues`; --dedup for a dedup queue)")
        c.purge(queue, dedup=args.dedup)
        if args.json:
            print_json({"queue": queue, "purged": True})
        else:
            print(f"purged {queue}")
        return 0
    return run_with_client(args, body)


def _purge_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("queue", help=QUEUE_HELP)
    p.add_argument("--yes", action="store_true", help="confirm (required: a purge cannot be undone)")
    add_connection_flags(p)


PURGE = Command("purge", "delete every message of a queue", _purge_arguments, run_purge, examples="""
spoolq purge orders --yes""")


def _queue_exists(c: SpoolqClient, name: str, dedup: bool) -> bool:
    """Whether the queue exists (``name``: a store name; with ``dedup`` the dedup queue's name)."""
    if dedup:
        return any(q.name == name and str(q.kind) == "dedup" for q in c.list_queues(prefix=name, limit=1))
    return any(m["store_name"] == name for m in c.resolve(name))


def run_move(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        args.source = resolve_queue(c, args.source, dedup=args.dedup)
        args.destination = resolve_queue(c, args.destination, dedup=args.dedup)
        if not _queue_exists(c, args.source, args.dedup):
            raise CliError(f"queue {args.source} does not exist: nothing to move "
                           "(see `spoolq queues`; --dedup for a dedup queue)")
        total = c.size(args.source, dedup=args.dedup)
        if args.max_per_second is not None:  # the console's move: paced, to a queue that exists
            if args.dedup:
                raise CliError("--max-per-second moves queues by their full names: leave out --dedup", 2)
            ref = str(c.start_move(args.source, args.destination, max_per_second=args.max_per_second)["ref"])
        else:
            ref = c.move(args.source, args.destination, dedup=args.dedup)
        if args.no_wait:
            if args.json:
                print_json({"id": ref, "from": args.source, "to": args.destination, "status": "IN_PROGRESS"})
            else:
                print(ref)
            return 0
        status = _wait_for_move(c, args, ref, total)
        if args.json:
            print_json({"id": ref, "from": args.source, "to": args.destination, "status": status})
        else:
            print(f"move {ref} {args.source} -> {args.destination}: {status}")
        if status == "ERROR":
            print(f"{args.prog}: move {ref} ended in ERROR; the messages not yet moved are still in {args.source}",
                  file=sys.stderr)
            return 1
        return 0
    return run_with_client(args, body)


def _wait_for_move(c: SpoolqClient, args: argparse.Namespace, ref: str, total: int) -> str:
    """Poll the move until it leaves IN_PROGRESS, showing progress on stderr: a bar (rich) on a
    terminal or with ``--progress bar``, one ``moved N/TOTAL`` line per check otherwise or with
    ``--progress lines``, nothing with ``--progress never``. Never both."""
    mode = {"always": "bar"}.get(args.progress, args.progress)
    if mode == "auto":
        mode = "bar" if sys.stderr.isatty() else "lines"

    def check() -> tuple[str, int]:
        state = str(c.move_status(ref, dedup=args.dedup).status)
        left = c.size(args.source, dedup=args.dedup)
        done = max(total, 1) if state == "COMPLETE" else max(0, min(total, total - left))
        return state, done

    if mode != "bar":
        while True:
            state, done = check()
            if mode == "lines":
                suffix = f" ({state})" if state != "IN_PROGRESS" else ""
                print(f"moved {min(done, total)}/{total}{suffix}", file=sys.stderr, flush=True)
            if state != "IN_PROGRESS":
                return state
            time.sleep(args.interval)

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, force_terminal=True)
    columns = (TextColumn("moving {task.fields[src]} -> {task.fields[dst]}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[state]}"))
    with Progress(*columns, console=console, transient=False, refresh_per_second=4) as progress:
        task = progress.add_task("move", total=max(total, 1), src=args.source, dst=args.destination, state="")
        while True:
            state, done = check()
            progress.update(task, completed=done, state="" if state == "IN_PROGRESS" else state)
            if state != "IN_PROGRESS":
                return state
            time.sleep(args.interval)


def _move_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="FROM", help="the queue to empty (must exist)")
    p.add_argument("destination", metavar="TO", help="the queue to fill (created if missing)")
    p.add_argument("--no-wait", dest="no_wait", action="store_true", help="print the move id and return")
    p.add_argument("--max-per-second", dest="max_per_second", type=int, metavar="N",
                   help="move at most N messages a second (TO must exist)")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between status checks (default 0.5)")
    p.add_argument("--progress", choices=["auto", "bar", "lines", "never", "always"], default="auto",
                   help="progress on stderr: bar, lines, or never (auto: a bar on a terminal, lines "
                        "otherwise; always is bar)")
    add_connection_flags(p)


MOVE = Command("move", "move every message to another queue, showing progress until done", _move_arguments, run_move, examples="""
spoolq move orders-dlq orders              # redrive a dead-letter queue
spoolq move big archive --progress lines   # one progress line per check
spoolq move big archive --no-wait          # print the move id and return
spoolq move big archive --max-per-second 200   # paced""")


def run_queues(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queues = sorted(c.list_queues(prefix=args.prefix or None, limit=args.limit), key=lambda q: q.name)
        if args.json:
            print_json([q.to_dict() for q in queues])
            return 0
        from rich.console import Console
        from rich.table import Table

        table = Table("queue", "kind", "depth", "claimed", "delayed", box=None, header_style="bold")  # kind: emodb, ...
        for q in queues:
            depth = f"{q.ready}" if q.exact else f"~{q.ready}"
            table.add_row(q.name, str(q.kind), depth, str(q.claimed), str(q.delayed))
        Console(width=200).print(table)
        if not queues:
            print("(no queues)")
        return 0
    return run_with_client(args, body)


def _queues_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prefix", default="", help="only queues whose name starts with this")
    p.add_argument("--limit", type=int, default=None, help="count each queue exactly up to this")
    add_connection_flags(p, dedup=False)


QUEUES = Command("queues", "table of queues (by name) with depth, claimed and delayed counts", _queues_arguments, run_queues, examples="""
spoolq queues
spoolq queues --prefix orders --json""")
