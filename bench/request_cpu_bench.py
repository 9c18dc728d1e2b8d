#!/usr/bin/env python3
"""CPU time of one request through the WSGI app, per operation, next to a trivial Flask endpoint.

    python bench/request_cpu_bench.py                    # every operation, 2,000 requests each
    python bench/request_cpu_bench.py --profile emodb_send   # plus a cProfile of that operation
    python bench/request_cpu_bench.py --service OTHER/service  # another checkout's code (before/after)

Calls the app object the way gunicorn's worker does (one WSGI environ per request, the body
iterated and closed), in this process, with ``--fsync never`` on a data directory in a temp dir
(on tmpfs, ``/dev/shm``, when there is one: the disk's own work is not the app's) and prometheus-client in multiprocess mode (as ``spoolq serve`` runs it). What is timed is the
CPU time of the thread serving the requests (``time.thread_time``: the store's background
threads, such as the one unlinking acknowledged files, are not counted) per request, the median
of 5 rounds (per poll and per ack: the median request), so the figures move far less with the
load of the machine than wall-clock request rates do. ``trivial`` is ``POST /hello`` answering
``{"success":true}`` from a bare Flask app: what Flask and werkzeug cost by themselves.

Operations: EmoDB ``send`` and ``sendbatch`` (10 messages), MQ send, SQS JSON ``SendMessage`` and
``SendMessageBatch`` (10 entries),
EmoDB ``poll`` (limit 10) and ``ack`` (the 10 ids just polled), 1 KiB bodies, open mode; and
``store_send``, the store's ``send`` of the same message called directly (its share of a send). A few
hundred requests of each run first (warm-up: children of labelled metrics, caches, imports).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

BODY = "x" * 1000
ROUNDS = 5  # the figure of an operation is the median of this many rounds


def environ(method: str, path: str, body: bytes = b"", query: str = "",
            headers: dict[str, str] | None = None) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8000", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False, "wsgi.version": (1, 0),
        "CONTENT_LENGTH": str(len(body)),
    }
    for k, v in (headers or {}).items():
        key = k.upper().replace("-", "_")
        env[key if key == "CONTENT_TYPE" else "HTTP_" + key] = v
    return env


def call(app: Callable[..., Iterable[bytes]], env: dict[str, Any]) -> tuple[str, bytes]:
    status: list[str] = []

    def start_response(s: str, _headers: list[tuple[str, str]], _exc: Any = None) -> Callable[[bytes], None]:
        status.append(s)
        return lambda _data: None

    result = app(env, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return status[0], body


def trivial_app() -> Any:
    from flask import Flask, Response

    app = Flask("trivial")

    @app.post("/hello")
    def hello() -> Response:
        return Response(b'{"success":true}', mimetype="application/json")
    return app


def requests_of(op: str) -> Callable[[], dict[str, Any]]:
    js = {"Content-Type": "application/json"}
    one = json.dumps(BODY).encode()
    batch = json.dumps([BODY] * 10).encode()
    sqs_body = json.dumps({"QueueUrl": "http://127.0.0.1:8000/123456789012/sq", "MessageBody": BODY}).encode()
    sqs_headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage"}
    sqs_batch = json.dumps({"QueueUrl": "http://127.0.0.1:8000/123456789012/sq", "Entries": [
        {"Id": str(i), "MessageBody": BODY} for i in range(10)]}).encode()
    sqs_batch_headers = {**sqs_headers, "X-Amz-Target": "AmazonSQS.SendMessageBatch"}
    makers: dict[str, Callable[[], dict[str, Any]]] = {
        "trivial": lambda: environ("POST", "/hello", one, headers=js),
        "emodb_send": lambda: environ("POST", "/queue/1/q/send", one, headers=js),
        "emodb_sendbatch": lambda: environ("POST", "/queue/1/qb/sendbatch", batch, headers=js),
        "mq_send": lambda: environ("POST", "/mq/m/messages", BODY.encode(), headers={"Content-Type": "text/plain"}),
        "sqs_send": lambda: environ("POST", "/", sqs_body, headers=sqs_headers),
        "sqs_sendbatch": lambda: environ("POST", "/", sqs_batch, headers=sqs_batch_headers),
    }
    return makers[op]


def run(app: Any, trivial: Any, n: int, profile: str | None, ops: list[str]) -> dict[str, float]:
    """µs of CPU per request of every operation."""
    out: dict[str, float] = {}
    sqs_create = environ("POST", "/", json.dumps({"QueueName": "sq"}).encode(),
                         headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.CreateQueue"})
    assert call(app, sqs_create)[0].startswith("200"), "CreateQueue failed"
    assert call(app, environ("PUT", "/mq/m"))[0][:1] == "2"
    for op in [o for o in ("trivial", "emodb_send", "emodb_sendbatch", "mq_send", "sqs_send", "sqs_sendbatch")
               if o in ops]:
        make = requests_of(op)
        target = trivial if op == "trivial" else app
        for _ in range(300):
            status, _ = call(target, make())
            assert status[:1] == "2", (op, status)
        prof = cProfile.Profile(time.thread_time) if profile == op else None
        rounds: list[float] = []
        for _ in range(ROUNDS):
            envs = [make() for _ in range(n // ROUNDS)]
            started = time.thread_time()
            if prof:
                prof.enable()
            for env in envs:
                call(target, env)
            if prof:
                prof.disable()
            rounds.append((time.thread_time() - started) / len(envs) * 1e6)
        out[op] = statistics.median(rounds)
        if prof:
            report(prof, op)
    if "store_send" in ops:  # the store's own share of a send: the same message, no HTTP
        from spoolq.store.model import OutgoingMessage, QueueKind

        store = app.extensions["spoolq"].store().wrapped
        message = OutgoingMessage(body=json.dumps(BODY).encode())
        rounds = []
        prof = cProfile.Profile(time.thread_time) if profile == "store_send" else None
        for _ in range(ROUNDS):
            started = time.thread_time()
            if prof:
                prof.enable()
            for _ in range(n // ROUNDS):
                store.send("q", message, create=QueueKind.STANDARD)
            if prof:
                prof.disable()
            rounds.append((time.thread_time() - started) / (n // ROUNDS) * 1e6)
        out["store_send"] = statistics.median(rounds)
        if prof:
            report(prof, "store_send")
    if "poll" not in ops:
        return out
    # poll 10 + ack 10 against the messages sent above (queue "q" holds n + 300)
    polls: list[float] = []
    acks: list[float] = []
    prof = cProfile.Profile(time.thread_time) if profile in ("poll", "ack") else None
    for _ in range(min(n, 2000) // 10):
        t0 = time.thread_time()
        if prof and profile == "poll":
            prof.enable()
        status, body = call(app, environ("GET", "/queue/1/q/poll", query="limit=10&ttl=60"))
        if prof:
            prof.disable()
        t1 = time.thread_time()
        ids = [m["id"] for m in json.loads(body)]
        if not ids:
            break
        env = environ("POST", "/queue/1/q/ack", json.dumps(ids).encode(), headers={"Content-Type": "application/json"})
        t2 = time.thread_time()
        if prof and profile == "ack":
            prof.enable()
        call(app, env)
        if prof:
            prof.disable()
        acks.append(time.thread_time() - t2)
        polls.append(t1 - t0)
    out["emodb_poll10"] = statistics.median(polls) * 1e6
    out["emodb_ack10"] = statistics.median(acks) * 1e6
    if prof:
        report(prof, profile or "")
    return out


def report(prof: cProfile.Profile, op: str) -> None:
    s = io.StringIO()
    stats = pstats.Stats(prof, stream=s)
    stats.sort_stats("tottime").print_stats(35)
    stats.sort_stats("cumulative").print_stats(45)
    print(f"--- cProfile of {op} ---\n{s.getvalue()}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000, help="timed requests per operation")
    ap.add_argument("--service", type=Path, default=Path(__file__).resolve().parents[1] / "service",
                    help="the service/ directory whose code is measured")
    ap.add_argument("--profile", help="print a cProfile of one operation (trivial, emodb_send, "
                    "emodb_sendbatch, mq_send, sqs_send, sqs_sendbatch, store_send, poll, ack)")
    ap.add_argument("--ops", default="trivial,emodb_send,emodb_sendbatch,mq_send,sqs_send,sqs_sendbatch,store_send,poll",
                    help="comma list of operations (poll: poll then ack the ids; needs emodb_send; "
                         "store_send: the store's send alone, in this thread, no HTTP)")
    args = ap.parse_args()
    shm = "/dev/shm"  # tmpfs when there is one: the file system's own work is not the app's
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-reqcpu-", dir=shm if os.access(shm, os.W_OK) else None))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(tmp / "metrics")
    (tmp / "metrics").mkdir()
    sys.path.insert(0, str(args.service.resolve()))
    try:
        from spoolq.http.app import create_app
        from spoolq.settings import Settings

        app = create_app(Settings(root=tmp / "root", node_id="bench", fsync=False))
        out = run(app, trivial_app(), args.requests, args.profile, args.ops.split(","))
        app.extensions["spoolq"].close()
        load = "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
        print(f"CPU µs per request ({args.service}; {load})")
        for op, us in out.items():
            ratio = f"  ({us / out['trivial']:.1f}x trivial)" if "trivial" in out else ""
            print(f"  {op:16s} {us:8.0f} µs{ratio}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
