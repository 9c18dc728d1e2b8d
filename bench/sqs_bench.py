"""boto3 against spoolq, moto_server and a canned-reply server, side by side in one run.

Usage::

    python bench/sqs_bench.py [--seconds 3] [--runs 3] [--clients 1] [--workers 2]

Workloads (the same boto3 client code for every target):

* ``send``: ``send_message`` of a 1 KiB body, calls/s;
* ``recv+del``: ``receive_message(MaxNumberOfMessages=10)`` + ``delete_message_batch`` of what
  came back, messages/s (the queue is pre-filled with ``send_message_batch`` first).

Targets, all on 127.0.0.1: spoolq (``spoolq serve``, FileStore, fsync always), ``moto_server``
(in memory), and a trivial HTTP/1.1 server returning canned replies in a separate process --
the ceiling boto3 itself allows. Each figure is the median of ``--runs`` timed runs; ratios are
printed against the ceiling and against moto. Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import requests
from botocore.config import Config

BODY = "x" * 1024
BODY_MD5 = "c9a34cfc85d982698c6ac89f76071abd"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise TimeoutError(url)


class _Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        action = (self.headers.get("X-Amz-Target") or "").rsplit(".", 1)[-1]
        reply: dict[str, Any] = {}
        if action == "CreateQueue":
            reply = {"QueueUrl": f"http://127.0.0.1:{self.server.server_port}/123456789012/q"}
        elif action == "SendMessage":
            reply = {"MD5OfMessageBody": BODY_MD5, "MessageId": str(uuid.uuid4())}
        elif action == "SendMessageBatch":
            reply = {"Successful": [{"Id": e["Id"], "MessageId": str(uuid.uuid4()), "MD5OfMessageBody": BODY_MD5}
                                    for e in request.get("Entries", [])], "Failed": []}
        elif action == "ReceiveMessage":
            reply = {"Messages": [{"MessageId": str(uuid.uuid4()), "ReceiptHandle": uuid.uuid4().hex * 4,
                                   "MD5OfBody": BODY_MD5, "Body": BODY} for _ in range(10)]}
        elif action == "DeleteMessageBatch":
            reply = {"Successful": [{"Id": e["Id"]} for e in request.get("Entries", [])], "Failed": []}
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve_canned(port: int) -> None:
    ThreadingHTTPServer(("127.0.0.1", port), _Canned).serve_forever()


@contextmanager
def _process(cmd: list[str], health: str, log: Path) -> Iterator[None]:
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, start_new_session=True)
    try:
        _wait(health)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _client(url: str) -> Any:
    return boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                        aws_secret_access_key="bench", config=Config(retries={"max_attempts": 1},
                                                                     max_pool_connections=64))


def _timed(clients: int, seconds: float, work: Callable[[Any], int], url: str) -> float:
    """Run ``work(client)`` in a loop on ``clients`` threads for ``seconds``; return units/s."""
    counts = [0] * clients
    stop = threading.Event()
    boto = [_client(url) for _ in range(clients)]

    def loop(i: int) -> None:
        while not stop.is_set():
            counts[i] += work(boto[i])

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - started)


def _prefill(url: str, queue_url: str, count: int) -> None:
    def fill(n: int) -> None:
        sqs = _client(url)
        for _ in range(n // 10):
            sqs.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(i), "MessageBody": BODY}
                                                                for i in range(10)])

    threads = [threading.Thread(target=fill, args=(count // 8,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def measure(name: str, url: str, args: argparse.Namespace, prefill: int) -> dict[str, float]:
    sqs = _client(url)
    queue_url = sqs.create_queue(QueueName=f"bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]

    def send(c: Any) -> int:
        c.send_message(QueueUrl=queue_url, MessageBody=BODY)
        return 1

    def recv_delete(c: Any) -> int:
        got = c.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if got:
            c.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
        return len(got)

    sends = [_timed(args.clients, args.seconds, send, url) for _ in range(args.runs)]
    send_rate = statistics.median(sends)
    recvs = []
    for _ in range(args.runs):
        # a fresh queue per run, holding only the pre-filled messages
        queue_url = sqs.create_queue(QueueName=f"bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        if prefill:
            _prefill(url, queue_url, prefill)
        rate = _timed(args.clients, args.seconds, recv_delete, url)
        if prefill and rate * args.seconds >= prefill * 0.95:
            print(f"  {name}: the queue ran dry ({prefill} pre-filled); recv+del is understated", flush=True)
        recvs.append(rate)
    result = {"send": send_rate, "recv+del": statistics.median(recvs)}
    print(f"  {name:8s} send {result['send']:8.0f}/s   recv+del {result['recv+del']:8.0f} msgs/s   "
          f"(runs: {[round(x) for x in sends]} / {[round(x) for x in recvs]})", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="spoolq gunicorn workers")
    parser.add_argument("--prefill", type=int, default=20_000, help="messages queued before each spoolq recv run")
    parser.add_argument("--canned-server", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.canned_server:
        serve_canned(args.canned_server)
        return
    bin_dir = Path(sys.executable).parent
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="sqs-bench-") as tmp:
        tmpdir = Path(tmp)
        print(f"boto3 {boto3.__version__}, {args.clients} client thread(s), {args.runs} x {args.seconds}s runs",
              flush=True)
        port = _free_port()
        with _process([sys.executable, __file__, "--canned-server", str(port)], f"http://127.0.0.1:{port}/",
                      tmpdir / "canned.log"):
            results["ceiling"] = measure("ceiling", f"http://127.0.0.1:{port}", args, prefill=0)
        port = _free_port()
        root = tmpdir / "root"
        root.mkdir()
        with _process([sys.executable, "-c", "import sys; from spoolq.cli import main; sys.exit(main())", "serve",
                       "--root", str(root), "--port", str(port), "--workers", str(args.workers),
                       "--fsync", "always"], f"http://127.0.0.1:{port}/healthz", tmpdir / "spoolq.log"):
            results["spoolq"] = measure("spoolq", f"http://127.0.0.1:{port}", args, prefill=args.prefill)
        port = _free_port()
        with _process([str(bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                      f"http://127.0.0.1:{port}/moto-api/", tmpdir / "moto.log"):
            # moto's receive scans its whole queue, so it gets a small queue (fair to it)
            results["moto"] = measure("moto", f"http://127.0.0.1:{port}", args, prefill=400)
    print()
    for metric in ("send", "recv+del"):
        s, m, c = results["spoolq"][metric], results["moto"][metric], results["ceiling"][metric]
        print(f"{metric:9s} spoolq/ceiling {s / c:5.2f}   spoolq/moto {s / m:6.1f}x   "
              f"(spoolq {s:.0f}, moto {m:.0f}, ceiling {c:.0f})")


if __name__ == "__main__":
    main()
