"""The client subcommands of ``spoolq``: send, poll, ack, peek, size, purge, move, tail, queues.

They talk to a running service over HTTP through the generated client (``spoolq_client``, the
``spoolq-client`` distribution in ``clients/python``). That package is imported lazily: ``spoolq
serve`` works without it, and a client command without it says how to install it. (spoolq does
not declare it as a dependency because it is not published on a package index; ``scripts/bootstrap``
installs both.)

Common flags: ``--url`` (or ``SPOOLQ_URL``, default ``http://127.0.0.1:8480``), ``--api-key`` (or
``SPOOLQ_API_KEY``), ``--dedup`` (use ``/dedupq/1``), ``--json`` (machine-readable output on
stdout). Errors are one line on stderr (exit 1): a refused connection, 403, 400 and 503 each
say what to check; usage errors exit 2.

Bodies (``send``): each argument is one message; ``@path`` reads a file, ``-`` reads standard
input, and no body reads standard input (``--lines``: one message per line). Text that parses
as JSON is sent as that JSON value, anything else as a JSON string (``--string`` forces a string).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from spoolq.cli_url import CliError as CliError  # re-exported: the commands raise it
from spoolq.cli_url import check_url, unresolvable

if TYPE_CHECKING:
    from spoolq_client import SpoolqClient

DEFAULT_URL = "http://127.0.0.1:8480"


# --- plumbing ---------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser, *, dedup: bool = True) -> None:
    p.add_argument("--url", default=None, help=f"service URL (default: $SPOOLQ_URL or {DEFAULT_URL})")
    p.add_argument("--api-key", dest="api_key", default=None, help="API key (default: $SPOOLQ_API_KEY)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout (for scripts)")
    p.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds (default 60)")
    if dedup:
        p.add_argument("--dedup", action="store_true", help="use the dedup queue API (/dedupq/1)")


def _client(args: argparse.Namespace) -> SpoolqClient:
    try:
        from spoolq_client import SpoolqClient
    except ImportError as e:
        raise CliError("the client commands need the spoolq-client package: pip install -e clients/python "
                       f"(or run scripts/bootstrap) [{e}]", 2) from None
    url = args.url or os.environ.get("SPOOLQ_URL") or DEFAULT_URL
    check_url(url, "--url" if args.url else "SPOOLQ_URL" if os.environ.get("SPOOLQ_URL") else "the default URL")
    key = args.api_key if args.api_key is not None else os.environ.get("SPOOLQ_API_KEY")
    return SpoolqClient(url, key or None, timeout=args.timeout)



@contextmanager
def _errors(url: str) -> Iterator[None]:
    """Turn the client's exceptions into one-line :class:`CliError` s."""
    import httpx

    from spoolq_client import BadRequest, NotAuthorized, NotFound, SpoolqApiError, Unavailable

    try:
        yield
    except httpx.ConnectError as e:
        if unresolvable(e):
            host = urlsplit(url).hostname or url
            raise CliError(f"cannot resolve the host {host!r} of {url}: check the name in --url or "
                           "SPOOLQ_URL") from None
        raise CliError(f"cannot connect to {url} (connection refused?): is spoolq running there? "
                       "Set --url or SPOOLQ_URL") from None
    except httpx.TimeoutException:
        raise CliError(f"{url} did not answer in time (raise --timeout?)") from None
    except httpx.HTTPError as e:
        raise CliError(f"HTTP error talking to {url}: {e}") from None
    except NotAuthorized as e:
        raise CliError(f"403 not authorized ({e.message or 'no reason given'}): check --api-key / "
                       "SPOOLQ_API_KEY and that the key has the permission for this queue") from None
    except BadRequest as e:
        raise CliError(f"{e.status} bad request: {e.message}") from None
    except NotFound as e:
        raise CliError(f"404 not found: {e.message}") from None
    except Unavailable as e:
        after = f"; retry after {e.retry_after:g}s" if e.retry_after is not None else ""
        raise CliError(f"503 service unavailable: {e.message}{after}") from None
    except SpoolqApiError as e:
        raise CliError(f"server error {e.status}: {e.message}") from None


def _run(args: argparse.Namespace, body: Callable[[SpoolqClient], int]) -> int:
    client = _client(args)
    try:
        with _errors(client.base_url):
            return body(client)
    finally:
        client.close()


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False))


def _print_messages(args: argparse.Namespace, messages: list[Any]) -> None:
    if args.json:
        _print_json([{"id": m.id, "payload": m.payload} for m in messages])
        return
    for m in messages:
        print(f"{m.id}\t{json.dumps(m.payload, ensure_ascii=False)}")


# --- bodies ------------------------------------------------------------------------------------


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


# --- commands ----------------------------------------------------------------------------------


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
            _print_json({"queue": args.queue, "sent": len(values)})
        else:
            print(f"sent {len(values)} message{'s' if len(values) != 1 else ''} to {args.queue}")
        return 0
    return _run(args, body)


def run_poll(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        messages = c.poll(args.queue, limit=args.limit, ttl=args.ttl, wait=args.wait, dedup=args.dedup)
        if args.ack and messages:
            c.ack(args.queue, [m.id for m in messages], dedup=args.dedup)
        _print_messages(args, messages)
        return 0
    return _run(args, body)


def run_peek(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        _print_messages(args, c.peek(args.queue, limit=args.limit, dedup=args.dedup))
        return 0
    return _run(args, body)


def run_ack(args: argparse.Namespace) -> int:
    ids = list(args.ids) or sys.stdin.read().split()
    if not ids:
        raise CliError("no message ids given (as arguments or on stdin)", 2)

    def body(c: SpoolqClient) -> int:
        c.ack(args.queue, ids, dedup=args.dedup)
        if args.json:
            _print_json({"queue": args.queue, "acked": len(ids)})
        else:
            print(f"acknowledged {len(ids)} message{'s' if len(ids) != 1 else ''} of {args.queue}")
        return 0
    return _run(args, body)


def run_size(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        n = c.size(args.queue, limit=args.limit, dedup=args.dedup)
        if args.json:
            _print_json({"queue": args.queue, "size": n, "claimed": c.claim_count(args.queue, dedup=args.dedup)})
        else:
            print(n)
        return 0
    return _run(args, body)


def run_purge(args: argparse.Namespace) -> int:
    if not args.yes:
        raise CliError(f"purge deletes every message of {args.queue}: add --yes to confirm", 2)

    def body(c: SpoolqClient) -> int:
        if not _queue_exists(c, args.queue, args.dedup):
            raise CliError(f"queue {args.queue} does not exist: nothing to purge "
                           "(see `spoolq queues`; --dedup for a dedup queue)")
        c.purge(args.queue, dedup=args.dedup)
        if args.json:
            _print_json({"queue": args.queue, "purged": True})
        else:
            print(f"purged {args.queue}")
        return 0
    return _run(args, body)


def _queue_exists(c: SpoolqClient, name: str, dedup: bool) -> bool:
    kind = "dedup" if dedup else None
    return any(q.name == name and (kind is None or str(q.kind) == kind)
               for q in c.list_queues(prefix=name, limit=1))


def run_move(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        if not _queue_exists(c, args.source, args.dedup):
            raise CliError(f"queue {args.source} does not exist: nothing to move "
                           "(see `spoolq queues`; --dedup for a dedup queue)")
        total = c.size(args.source, dedup=args.dedup)
        ref = c.move(args.source, args.destination, dedup=args.dedup)
        if args.no_wait:
            if args.json:
                _print_json({"id": ref, "from": args.source, "to": args.destination, "status": "IN_PROGRESS"})
            else:
                print(ref)
            return 0
        status = _wait_for_move(c, args, ref, total)
        if args.json:
            _print_json({"id": ref, "from": args.source, "to": args.destination, "status": status})
        else:
            print(f"move {ref} {args.source} -> {args.destination}: {status}")
        if status == "ERROR":
            print(f"spoolq: move {ref} ended in ERROR; the messages not yet moved are still in {args.source}",
                  file=sys.stderr)
            return 1
        return 0
    return _run(args, body)


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
                    _print_json({"id": m.id, "payload": m.payload})
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
        return _run(args, body)
    except KeyboardInterrupt:
        return 0


def run_queues(args: argparse.Namespace) -> int:
    def body(c: SpoolqClient) -> int:
        queues = sorted(c.list_queues(prefix=args.prefix or None, limit=args.limit), key=lambda q: q.name)
        if args.json:
            _print_json([q.to_dict() for q in queues])
            return 0
        from rich.console import Console
        from rich.table import Table

        table = Table("queue", "kind", "depth", "claimed", "delayed", box=None, header_style="bold")
        for q in queues:
            depth = f"{q.ready}" if q.exact else f"~{q.ready}"
            table.add_row(q.name, str(q.kind), depth, str(q.claimed), str(q.delayed))
        Console(width=200).print(table)
        if not queues:
            print("(no queues)")
        return 0
    return _run(args, body)


# --- registration ------------------------------------------------------------------------------


class _IntermixedParser(argparse.ArgumentParser):
    """Options may come between positionals (``spoolq send q --string 7``): argparse's
    intermixed parsing, used when the parent parser hands the remaining arguments over."""

    _inside = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inside:
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def add_client_commands(sub: Any) -> None:
    """Add the client subcommands to ``spoolq``'s argparse subparsers."""
    parser_class = sub._parser_class
    sub._parser_class = _IntermixedParser
    try:
        _add_commands(sub)
    finally:
        sub._parser_class = parser_class


def _parser(sub: Any, name: str, help: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples."""
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help, description=help[0].upper() + help[1:] + ".",
        epilog="examples:\n" + "\n".join(f"  {line}" for line in examples.strip().splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    return p


_QUEUE_HELP = "queue name (the /queue/1 name, or the /dedupq/1 name with --dedup)"


def _add_commands(sub: Any) -> None:
    p = _parser(sub, "send", "send messages (arguments, @file or stdin)", """
spoolq send orders '{"id": 7}' '{"id": 8}'      # two JSON messages
spoolq send orders @order.json                  # the body from a file
tail -f events.log | spoolq send logs --lines   # one message per line of stdin""")
    p.add_argument("queue", help=_QUEUE_HELP + "; created on first send")
    p.add_argument("bodies", nargs="*", metavar="BODY",
                   help="a message (JSON, or text sent as a JSON string); @path reads a file; - or none: stdin")
    p.add_argument("--lines", action="store_true", help="one message per line of the input")
    p.add_argument("--string", action="store_true", help="send the text as a JSON string even if it is JSON")
    p.add_argument("--delay", type=float, help="seconds before the messages become visible")
    p.add_argument("--ttl", type=float, help="drop the messages if not consumed within this many seconds")
    p.add_argument("--at-most-once", dest="at_most_once", action="store_true",
                   help="deliver each message at most once (never redelivered after a claim expires)")
    p.add_argument("--batch", type=int, default=500, help="messages per sendbatch call (default 500)")
    _common(p)
    p.set_defaults(handler=run_send)

    p = _parser(sub, "poll", "claim messages and print them", """
spoolq poll orders --limit 5 --ttl 60     # claim up to 5 for a minute
spoolq poll orders --wait 20 --ack --json # long-poll, print as JSON, acknowledge at once""")
    p.add_argument("queue", help=_QUEUE_HELP)
    p.add_argument("--limit", type=int, default=10, help="most messages to claim (1-1000, default 10)")
    p.add_argument("--ttl", type=int, default=30, help="claim seconds (0-3600, default 30)")
    p.add_argument("--wait", type=float, default=None, help="long-poll up to this many seconds (0-20)")
    p.add_argument("--ack", action="store_true", help="acknowledge the printed messages at once")
    _common(p)
    p.set_defaults(handler=run_poll)

    p = _parser(sub, "ack", "acknowledge messages by id (arguments or stdin)", """
spoolq ack orders 01a2018725a40bbfd16a2256cf1510d25ea02fb6
spoolq poll orders --json | jq -r '.[].id' | spoolq ack orders""")
    p.add_argument("queue", help=_QUEUE_HELP)
    p.add_argument("ids", nargs="*", metavar="ID", help="message ids (40 hex digits); none: read them from stdin")
    _common(p)
    p.set_defaults(handler=run_ack)

    p = _parser(sub, "peek", "print messages without claiming them", """
spoolq peek orders --limit 3""")
    p.add_argument("queue", help=_QUEUE_HELP)
    p.add_argument("--limit", type=int, default=10, help="most messages to print (1-5000, default 10)")
    _common(p)
    p.set_defaults(handler=run_peek)

    p = _parser(sub, "size", "print the number of messages", """
spoolq size orders
spoolq size orders --json        # {"queue": ..., "size": ..., "claimed": ...}""")
    p.add_argument("queue", help=_QUEUE_HELP)
    p.add_argument("--limit", type=int, default=None, help="count exactly up to this, estimate beyond")
    _common(p)
    p.set_defaults(handler=run_size)

    p = _parser(sub, "purge", "delete every message of a queue", """
spoolq purge orders --yes""")
    p.add_argument("queue", help=_QUEUE_HELP)
    p.add_argument("--yes", action="store_true", help="confirm (required: a purge cannot be undone)")
    _common(p)
    p.set_defaults(handler=run_purge)

    p = _parser(sub, "move", "move every message to another queue, showing progress until done", """
spoolq move orders-dlq orders              # redrive a dead-letter queue
spoolq move big archive --progress lines   # one progress line per check
spoolq move big archive --no-wait          # print the move id and return""")
    p.add_argument("source", metavar="FROM", help="the queue to empty (must exist)")
    p.add_argument("destination", metavar="TO", help="the queue to fill (created if missing)")
    p.add_argument("--no-wait", dest="no_wait", action="store_true", help="print the move id and return")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between status checks (default 0.5)")
    p.add_argument("--progress", choices=["auto", "bar", "lines", "never", "always"], default="auto",
                   help="progress on stderr: bar, lines, or never (auto: a bar on a terminal, lines "
                        "otherwise; always is bar)")
    _common(p)
    p.set_defaults(handler=run_move)

    p = _parser(sub, "tail", "follow a queue without consuming (peek polling)", """
spoolq tail orders                         # until Ctrl-C
spoolq tail orders --count 10 --json       # the first 10, as JSON lines""")
    p.add_argument("queue", help=_QUEUE_HELP)
    p.add_argument("--limit", type=int, default=1000, help="peek window: the oldest N ready messages")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between peeks (default 1)")
    p.add_argument("--count", type=int, default=None, help="exit after printing this many messages")
    p.add_argument("--timeout-after", dest="timeout_after", type=float, default=None,
                   help="exit after this many seconds")
    _common(p)
    p.set_defaults(handler=run_tail)

    p = _parser(sub, "queues", "table of queues (by name) with depth, claimed and delayed counts", """
spoolq queues
spoolq queues --prefix orders --json""")
    p.add_argument("--prefix", default="", help="only queues whose name starts with this")
    p.add_argument("--limit", type=int, default=None, help="count each queue exactly up to this")
    _common(p, dedup=False)
    p.set_defaults(handler=run_queues)
