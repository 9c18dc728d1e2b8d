"""A long-poll load on a running server: many waiting EmoDB polls, a sender and short polls.

Used by ``tests/e2e/test_http_parked_polls.py`` (asserts) and ``bench/longpoll_bench.py``
(prints). Everything runs on one asyncio loop over raw HTTP/1.1 sockets to 127.0.0.1:

* ``waiters`` connections each send ``GET /queue/1/<queue>/poll?wait=<wait>&limit=1`` and read
  the answer (the time from writing the request to the end of the answer is recorded);
* once they are all sent and parked (``parked``: how many polls the server says wait parked; else
  after a second), a sender ``POST``s ``messages``
  distinct messages to that queue over ``send_conns`` keep-alive connections at
  ``send_rate``/s, and a short poller polls another queue (``wait=0``) over keep-alive
  connections, each request timed.
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.e2e.spoolq_server import metric


def raise_nofile(want: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return status, body


def _request(method: str, path: str, key: str, body: bytes = b"", *, close: bool = False) -> bytes:
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-BV-API-Key: {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n")
    if close:
        head += "Connection: close\r\n"
    return head.encode("latin-1") + b"\r\n" + body


@dataclass
class LoadResult:
    waits: list[float] = field(default_factory=list)  # seconds each long poll took
    waiter_errors: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)  # payloads the long polls got
    sent: list[str] = field(default_factory=list)
    send_latency: list[float] = field(default_factory=list)
    short_latency: list[float] = field(default_factory=list)
    short_errors: list[str] = field(default_factory=list)
    connect_seconds: float = 0.0

    @staticmethod
    def pct(values: list[float], q: float) -> float:
        if not values:
            return float("nan")
        s = sorted(values)
        return s[min(len(s) - 1, int(q * len(s)))]

    def summary(self, wait: float) -> str:
        late = max((w - wait for w in self.waits), default=float("nan"))
        return (f"{len(self.waits)} long polls (wait={wait:g}s) answered, latest {late:+.3f}s past the wait; "
                f"{len(self.delivered)}/{len(self.sent)} messages delivered to them; "
                f"send p50 {1000 * self.pct(self.send_latency, .5):.1f} ms p99 "
                f"{1000 * self.pct(self.send_latency, .99):.1f} ms (n={len(self.send_latency)}); "
                f"short poll p50 {1000 * self.pct(self.short_latency, .5):.1f} ms p99 "
                f"{1000 * self.pct(self.short_latency, .99):.1f} ms (n={len(self.short_latency)}); "
                f"connecting the waiters took {self.connect_seconds:.2f}s")


async def _waiter(port: int, key: str, path: str, res: LoadResult, ready: asyncio.Event,
                  sem: asyncio.Semaphore) -> None:
    async with sem:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError as e:
            res.waiter_errors.append(f"connect: {e}")
            ready.set()
            return
    try:
        t0 = time.monotonic()
        writer.write(_request("GET", path, key, close=True))
        await writer.drain()
        ready.set()
        status, body = await _read_response(reader)
        res.waits.append(time.monotonic() - t0)
        if status != 200:
            res.waiter_errors.append(f"{status} {body[:200]!r}")
            return
        for m in json.loads(body):
            res.delivered.append(m["payload"])
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        res.waiter_errors.append(repr(e))
    finally:
        writer.close()


async def _timed_loop(port: int, key: str, make: list[bytes], latencies: list[float],
                      errors: list[str], rate: float, on_ok: list[str] | None = None,
                      labels: list[str] | None = None) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.monotonic()
    try:
        for i, raw in enumerate(make):
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            t0 = time.monotonic()
            writer.write(raw)
            await writer.drain()
            status, body = await _read_response(reader)
            latencies.append(time.monotonic() - t0)
            if status != 200:
                errors.append(f"{status} {body[:200]!r}")
            elif on_ok is not None and labels is not None:
                on_ok.append(labels[i])
    finally:
        writer.close()


def parked_polls(url: str) -> float:
    """The long polls ``url``'s workers hold parked, by ``spoolq_http_connections{state="parked"}``
    (each worker updates it every second)."""
    return metric(url, "spoolq_http_connections", missing=0.0, state="parked")


async def _until_parked(parked: Callable[[], float] | None, waiters: int, within: float) -> None:
    """Wait until the server holds ``waiters`` polls parked (at most ``within`` seconds), so that
    the timed requests do not queue behind the waiters' own first runs; without ``parked``, a
    second."""
    if parked is None:
        await asyncio.sleep(1.0)
        return
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and await asyncio.to_thread(parked) < waiters:
        await asyncio.sleep(0.2)


async def run_load(port: int, key: str, *, waiters: int, wait: float, messages: int, send_rate: float,
                   send_conns: int = 4, short_rate: float = 40.0, queue: str = "lp",
                   short_queue: str = "lp-short", connect_concurrency: int = 200,
                   parked: Callable[[], float] | None = None) -> LoadResult:
    res = LoadResult()
    raise_nofile(waiters + 1024)
    sem = asyncio.Semaphore(connect_concurrency)
    events = [asyncio.Event() for _ in range(waiters)]
    path = f"/queue/1/{queue}/poll?wait={wait:g}&limit=1&ttl=300"
    t0 = time.monotonic()
    tasks = [asyncio.create_task(_waiter(port, key, path, res, events[i], sem)) for i in range(waiters)]
    for ev in events:
        await ev.wait()
    res.connect_seconds = time.monotonic() - t0
    await _until_parked(parked, waiters, within=wait / 2)
    payloads = [f"m-{i}" for i in range(messages)]
    per = [payloads[i::send_conns] for i in range(send_conns)]
    duration = messages / send_rate
    senders = [asyncio.create_task(_timed_loop(
        port, key, [_request("POST", f"/queue/1/{queue}/send", key, json.dumps(p).encode()) for p in chunk],
        res.send_latency, res.short_errors, send_rate / send_conns, res.sent, chunk)) for chunk in per if chunk]
    n_short = max(1, int(duration * short_rate))
    shorts = [asyncio.create_task(_timed_loop(
        port, key, [_request("GET", f"/queue/1/{short_queue}/poll?limit=1", key)] * (n_short // 2),
        res.short_latency, res.short_errors, short_rate / 2)) for _ in range(2)]
    await asyncio.gather(*senders, *shorts)
    await asyncio.gather(*tasks)
    return res
