"""boto3 against spoolq, LocalStack's SQS, MiniStack, moto_server and a canned-reply server, side by side.

Usage::

    python bench/sqs_bench.py [--seconds 3] [--runs 3] [--clients 8] [--workers 2]
    python bench/sqs_bench.py --spoolq-fsync always,never   # spoolq with and without its flush

Workloads (the same boto3 client code for every target, ``--clients`` threads, one client each):

* ``send``: ``send_message`` of a 1 KiB body, messages/s;
* ``send-batch``: ``send_message_batch`` of 10 such messages, messages/s;
* ``recv+del``: ``receive_message(MaxNumberOfMessages=10)`` + ``delete_message_batch`` of what
  came back, messages/s, on a fresh queue pre-filled with ``send_message_batch`` first.

Targets, all on 127.0.0.1, all started before the first cell and kept up to the end:

* spoolq: ``spoolq serve`` (``--workers`` gunicorn workers) once per ``--spoolq-fsync`` mode,
  on a data dir beside the checkout (the disk the service would use); with ``--compare DIR``
  also the ``spoolq`` of another checkout's ``service/`` (before/after in one run);
* LocalStack's SQS run on the host by ``bench/localstack-sqs`` (which installs it into a venv
  outside the checkout on first use; Python 3.12 or newer needed), in memory;
* MiniStack (a free LocalStack replacement from the package index) run by ``bench/ministack-sqs``
  (a venv of its own outside the checkout, made on first use), ``SERVICES=sqs``, account
  ``000000000000``, in memory;
* ``moto_server`` (in memory);
* ``ceiling``: a trivial HTTP/1.1 server returning canned replies, in its own process: the most
  boto3 itself gets through;
* ``flask-ceiling``: the same canned replies from a Flask app under gunicorn with spoolq's worker
  class and threads (``gthread``, ``--workers`` x 32): what the HTTP stack spoolq is built on costs
  before any of spoolq's own work.

Next to each rate, the CPU time the target's processes (the server's whole process group: gunicorn's
master and workers, LocalStack, moto) spent per message during the cell, from ``/proc``: what a
message costs the server, which moves far less with the machine's load than the rate does.

Cells alternate: each run measures every workload on every target before the next run starts,
so a change in the machine's load hits all of them alike. Each figure is the median of ``--runs``;
the ratios of spoolq to LocalStack and to moto are printed per workload. ``--skip`` leaves a
target out. Not a test: nothing here asserts.
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
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import boto3
import requests
from botocore.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_cpu import group_cpu, own_cpu

CHECKOUT = Path(__file__).resolve().parent.parent
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


def canned_reply(action: str, request: dict[str, Any], port: int) -> bytes:
    """The reply of a server that parses the JSON request and stores nothing: the same bytes for
    the stdlib ``ceiling`` and the ``flask-ceiling`` targets."""
    reply: dict[str, Any] = {}
    if action == "CreateQueue":
        reply = {"QueueUrl": f"http://127.0.0.1:{port}/123456789012/q"}
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
    return json.dumps(reply).encode()


class _Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        action = (self.headers.get("X-Amz-Target") or "").rsplit(".", 1)[-1]
        body = canned_reply(action, request, cast(ThreadingHTTPServer, self.server).server_port)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def flask_canned_app(port: int) -> Any:
    """The canned replies from a Flask app, for gunicorn with spoolq's worker class and threads
    (the ``flask-ceiling`` target): what the product's HTTP stack costs before spoolq's own work."""
    from flask import Flask, Response, request

    app = Flask("flask_ceiling")

    @app.get("/")
    def health() -> str:
        return "ok"

    @app.post("/")
    def action() -> Response:
        name = (request.headers.get("X-Amz-Target") or "").rsplit(".", 1)[-1]
        body = canned_reply(name, json.loads(request.get_data() or b"{}"), port)
        return Response(body, content_type="application/x-amz-json-1.0")

    return app


def serve_canned(port: int) -> None:
    ThreadingHTTPServer(("127.0.0.1", port), _Canned).serve_forever()


@contextmanager
def _process(cmd: list[str], health: str, log: Path, env: dict[str, str] | None = None,
             timeout: float = 30.0) -> Iterator[int]:
    """The server ``cmd`` in a session (and process group) of its own; yields its group id."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, start_new_session=True, env=env)
    try:
        _wait(health, timeout)
        yield proc.pid
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


WORKLOADS = ("send", "send-batch", "recv+del")


def measure(name: str, workload: str, url: str, args: argparse.Namespace, prefill: int,
            pgid: int, cpu: dict[tuple[str, str], list[float]]) -> float:
    """One cell: ``workload`` against the target at ``url`` on a fresh queue, messages/s; the
    server's CPU µs per message is appended to ``cpu``."""
    sqs = _client(url)
    queue_url = sqs.create_queue(QueueName=f"bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    entries = [{"Id": str(i), "MessageBody": BODY} for i in range(10)]

    def send(c: Any) -> int:
        c.send_message(QueueUrl=queue_url, MessageBody=BODY)
        return 1

    def send_batch(c: Any) -> int:
        return len(c.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Successful", []))

    def recv_delete(c: Any) -> int:
        got = c.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if got:
            c.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
        return len(got)

    if workload == "recv+del" and prefill:
        _prefill(url, queue_url, prefill)
    work = {"send": send, "send-batch": send_batch, "recv+del": recv_delete}[workload]
    cpu_before, own_before, started = group_cpu(pgid), own_cpu(), time.perf_counter()
    rate = _timed(args.clients, args.seconds, work, url)
    messages = max(rate * (time.perf_counter() - started), 1)
    per_message = (group_cpu(pgid) - cpu_before) / messages * 1e6
    client = (own_cpu() - own_before) / messages * 1e6
    cpu.setdefault((name, workload), []).append(per_message)
    note = ""
    if workload == "recv+del" and prefill and rate * args.seconds >= prefill * 0.95:
        note = f" (the queue ran dry: {prefill} pre-filled; understated)"
    print(f"  {name:16s} {workload:10s} {rate:8,.0f} msgs/s  server CPU {per_message:6,.0f} µs/msg, "
          f"client (boto3) {client:6,.0f} µs/msg  ({load()}){note}",
          flush=True)
    return rate


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="spoolq gunicorn workers")
    parser.add_argument("--spoolq-fsync", default="always", help="comma-separated spoolq --fsync modes to serve")
    parser.add_argument("--service", default=str(CHECKOUT / "service"),
                        help="the service/ dir whose spoolq to serve (e.g. an older checkout's, for before/after)")
    parser.add_argument("--compare", default=None,
                        help="another service/ dir served next to --service (same modes), as 'compared'")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    parser.add_argument("--flush", default=None,
                        help="spoolq's --flush for its durable modes, comma-separated for one server each "
                             "(default: the one it chooses for the data dir's file system)")
    parser.add_argument("--skip", default="",
                        help="comma-separated targets to leave out: localstack, ministack, moto, ceiling, "
                             "flask-ceiling")
    parser.add_argument("--prefill", type=int, default=20_000, help="messages queued before each recv+del cell")
    parser.add_argument("--small-prefill", type=int, default=2_000,
                        help="the same for moto, whose receive scans its whole queue")
    parser.add_argument("--dir", default=None, help="parent of spoolq's data dirs (default: beside the checkout)")
    parser.add_argument("--canned-server", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.canned_server:
        serve_canned(args.canned_server)
        return
    skip = set(filter(None, args.skip.split(",")))
    bin_dir = Path(sys.executable).parent
    targets: dict[str, tuple[str, int, int]] = {}  # name -> (url, prefill, process group)
    rates: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    loads: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sqs-bench-", dir=args.dir or CHECKOUT.parent) as tmp, \
            ExitStack() as servers:
        tmpdir = Path(tmp)
        print(f"boto3 {boto3.__version__}, {args.clients} client thread(s), {args.runs} x {args.seconds:g} s "
              f"alternating cells; {load()}", flush=True)
        services = {"spoolq": args.service, **({"compared": args.compare} if args.compare else {})}
        for label, service in services.items():
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([service, os.environ.get("PYTHONPATH", "")])}
            for mode, flush in [(m, f) for m in args.spoolq_fsync.split(",")
                                for f in ((args.flush or "").split(",") if m != "never" else [""])]:
                port = _free_port()
                name = f"{label} fsync={mode}" + (f" flush={flush}" if flush else "")
                root = tmpdir / f"root-{label}-{mode}-{flush}"
                root.mkdir()
                pgid = servers.enter_context(_process(
                    [sys.executable, "-c", "import sys; from spoolq.cli import main; sys.exit(main())", "serve",
                     "--root", str(root), "--port", str(port), "--workers", str(args.workers), "--fsync", mode]
                    + (["--flush", flush] if flush else []),
                    f"http://127.0.0.1:{port}/healthz", tmpdir / f"{label}-{mode}-{flush}.log", env=env))
                targets[name] = (f"http://127.0.0.1:{port}", args.prefill, pgid)
        if "localstack" not in skip:
            port = _free_port()
            pgid = servers.enter_context(_process(
                [str(CHECKOUT / "bench" / "localstack-sqs"), "serve", str(port), str(tmpdir / "localstack")],
                f"http://127.0.0.1:{port}/_localstack/health", tmpdir / "localstack.log", timeout=300))
            targets["localstack"] = (f"http://127.0.0.1:{port}", args.prefill, pgid)
        if "ministack" not in skip:
            port = _free_port()
            pgid = servers.enter_context(_process(
                [str(CHECKOUT / "bench" / "ministack-sqs"), "serve", str(port)],
                f"http://127.0.0.1:{port}/_ministack/health", tmpdir / "ministack.log", timeout=300))
            targets["ministack"] = (f"http://127.0.0.1:{port}", args.prefill, pgid)
        if "moto" not in skip:
            port = _free_port()
            pgid = servers.enter_context(_process([str(bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                                                  f"http://127.0.0.1:{port}/moto-api/", tmpdir / "moto.log"))
            targets["moto"] = (f"http://127.0.0.1:{port}", args.small_prefill, pgid)
        if "ceiling" not in skip:
            port = _free_port()
            pgid = servers.enter_context(_process([sys.executable, __file__, "--canned-server", str(port)],
                                                  f"http://127.0.0.1:{port}/", tmpdir / "canned.log"))
            targets["ceiling"] = (f"http://127.0.0.1:{port}", 0, pgid)
        if "flask-ceiling" not in skip:
            port = _free_port()
            pgid = servers.enter_context(_process(
                [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--workers", str(args.workers),
                 "--threads", "32", "--bind", f"127.0.0.1:{port}", "--chdir", str(CHECKOUT / "bench"),
                 f"sqs_bench:flask_canned_app({port})"],
                f"http://127.0.0.1:{port}/", tmpdir / "flask-canned.log"))
            targets["flask-ceiling"] = (f"http://127.0.0.1:{port}", 0, pgid)
        for run in range(args.runs):
            loads.append(load())
            print(f"run {run + 1}/{args.runs}", flush=True)
            for workload in args.workloads.split(","):
                for name, (url, prefill, pgid) in targets.items():
                    rates.setdefault((name, workload), []).append(
                        measure(name, workload, url, args, prefill, pgid, cpu))
    med = {k: statistics.median(v) for k, v in rates.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    workloads = [w for w in WORKLOADS if w in args.workloads.split(",")]
    print(f"\n## sqs_bench: {args.clients} boto3 threads, {args.runs} x {args.seconds:g} s alternating cells, "
          f"median msgs/s; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("load at the start of each run: " + "; ".join(loads))
    names = list(targets)
    print("\n| workload | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for workload in workloads:
        print(f"| {workload} | " + " | ".join(f"{med[(n, workload)]:,.0f}" for n in names) + " |")
    print("\nserver CPU µs per message (medians)")
    print("\n| workload | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for workload in workloads:
        print(f"| {workload} | " + " | ".join(f"{med_cpu[(n, workload)]:,.0f}" for n in names) + " |")
    print("\n| ratio | " + " | ".join(workloads) + " |\n|---|" + "---|" * len(workloads))
    for name in names:
        if not name.startswith("spoolq"):
            continue
        for other in ("localstack", "ministack", "moto", "ceiling", "flask-ceiling",
                      name.replace("spoolq", "compared")):
            if other in targets:
                print(f"| {name} / {other} | "
                      + " | ".join(f"{med[(name, w)] / med[(other, w)]:.2f}" for w in workloads) + " |")


if __name__ == "__main__":
    main()
