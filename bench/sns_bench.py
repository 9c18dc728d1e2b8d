#!/usr/bin/env python3
"""CPU of an SNS publish that fans out to queues, next to one SQS SendMessage, through the WSGI app.

    python bench/sns_bench.py                       # CPU µs per request, --fsync never on tmpfs
    python bench/sns_bench.py --instructions        # instructions per request, under callgrind
    python bench/sns_bench.py --flush journal --dir /var/tmp   # durable, on a disk (the flush's CPU too)

The requests are made and served as ``bench/request_cpu_bench.py`` serves its own (its helpers:
one WSGI environ per request, this thread's CPU time, median of 5 rounds; under callgrind the
serving thread's instructions between the first and the last request of an operation). 1 KiB
messages, open mode, each request signed for its service's credential scope as the AWS SDKs sign
(the signature itself is not checked in open mode):

* ``sqs_send``: SQS ``SendMessage`` (JSON protocol), the anchor;
* ``publish_1``: ``Publish`` to a topic with one subscribed queue (the notification's JSON, signed);
* ``publish_10``: the same topic shape with 10 subscribed queues;
* ``publish_10_raw``: 10 queues with raw delivery (no envelope, no signature);
* ``publish_10_filter20``: 10 queues, each subscription with a filter policy of 20 conditions
  over 5 message attributes, all matching (the message carries the 5 attributes; compare it with
  ``publish_10_attrs``, the same message to 10 queues without a policy).

**Server CPU** (``--server``): the same requests over HTTP (one keep-alive connection, one request
at a time) to a real ``spoolq serve`` (gunicorn, ``--workers 1``), durable by default (``--flush``
as the server picks it unless given); the figure is the CPU (user + system) of the server's whole
process group per request (``bench/server_cpu.py``): gunicorn, the app, the flush's system calls.

The goals it reports: ``publish_10`` at most 3x ``sqs_send``; ``publish_10_filter20`` under 5 %
above ``publish_10_attrs``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import request_cpu_bench as rcb

BODY = "x" * 1000
ACCOUNT, REGION = "123456789012", "us-east-1"
ROUNDS = 5


def twenty(i: int) -> dict[str, Any]:
    """Subscription ``i``'s filter policy: 20 conditions over 5 attributes (each subscription its
    own policy, as each consumer has its own), all matching the benchmark's message."""
    return {"kind": [f"kind{i}-{j}" for j in range(15)] + [{"prefix": "order-"}],
            "amount": [{"numeric": [">", i, "<=", 1000]}], "region": [{"anything-but": [f"eu-west-{i}"]}],
            "ip": [{"cidr": f"10.{i}.0.0/8"}], "trace": [{"exists": True}]}
ATTRIBUTES = {"kind": ("String", "order-7"), "amount": ("Number", "10"), "region": ("String", "us-east-1"),
              "ip": ("String", "10.1.2.3"), "trace": ("String", "t-1")}
OPS = ("sqs_send", "publish_1", "publish_10", "publish_10_raw", "publish_10_attrs", "publish_10_filter20")


def _auth(service: str) -> dict[str, str]:
    return {"Authorization": f"AWS4-HMAC-SHA256 Credential=AKIDBENCH/20261129/{REGION}/{service}/aws4_request, "
                             "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
            "X-Amz-Date": "20261129T000000Z"}


def _sns(action: str, **params: str) -> dict[str, Any]:
    form = urlencode({"Action": action, "Version": "2010-03-31", **params}).encode()
    return rcb.environ("POST", "/", form, headers={"Content-Type": "application/x-www-form-urlencoded",
                                                   **_auth("sns")})


def _sqs(action: str, body: dict[str, Any]) -> dict[str, Any]:
    return rcb.environ("POST", "/", json.dumps(body).encode(), headers={
        "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{action}", **_auth("sqs")})


def _ok(app: Any, env: dict[str, Any]) -> bytes:
    status, body = rcb.call(app, env)
    assert status.startswith("200"), (status, body[:400])
    return body


def setup(app: Any) -> dict[str, Callable[[], dict[str, Any]]]:
    """The topics and queues of every operation; the request maker of each."""
    _ok(app, _sqs("CreateQueue", {"QueueName": "anchor"}))
    shapes = {"publish_1": (1, {}), "publish_10": (10, {}), "publish_10_raw": (10, {"RawMessageDelivery": "true"}),
              "publish_10_attrs": (10, {}), "publish_10_filter20": (10, {"FilterPolicy": ""})}
    makers: dict[str, Callable[[], dict[str, Any]]] = {
        "sqs_send": lambda: _sqs("SendMessage", {"QueueUrl": f"http://127.0.0.1:8000/{ACCOUNT}/anchor",
                                                 "MessageBody": BODY})}
    attrs: dict[str, str] = {}
    for i, (name, (data_type, value)) in enumerate(ATTRIBUTES.items(), 1):
        attrs |= {f"MessageAttributes.entry.{i}.Name": name, f"MessageAttributes.entry.{i}.Value.DataType": data_type,
                  f"MessageAttributes.entry.{i}.Value.StringValue": value}
    for op, (queues, sub_attributes) in shapes.items():
        topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:{op}"
        _ok(app, _sns("CreateTopic", Name=op))
        for q in range(queues):
            _ok(app, _sqs("CreateQueue", {"QueueName": f"{op}-{q}"}))
            if "FilterPolicy" in sub_attributes:
                sub_attributes = {**sub_attributes, "FilterPolicy": json.dumps(twenty(q))}
            sub = {f"Attributes.entry.{i}.{kv}": text for i, (k, v) in enumerate(sub_attributes.items(), 1)
                   for kv, text in (("key", k), ("value", v))}
            _ok(app, _sns("Subscribe", TopicArn=topic, Protocol="sqs",
                          Endpoint=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{op}-{q}", **sub))
        extra = attrs if op in ("publish_10_attrs", "publish_10_filter20") else {}
        makers[op] = lambda topic=topic, extra=extra: _sns("Publish", TopicArn=topic, Message=BODY, **extra)
    return makers


def run(app: Any, n: int, ops: list[str], meter: rcb.Meter) -> dict[str, float]:
    makers = setup(app)
    time.sleep(2.5)  # a topic changed in the last 2 s is read again on every publish (spoolq/topics/catalog.py)
    counting = meter.counting
    out: dict[str, float] = {}
    for op in ops:
        make = makers[op]
        for _ in range(100):
            _ok(app, make())
        rounds: list[float] = []
        for _ in range(1 if counting else ROUNDS):
            envs = [make() for _ in range(n // (1 if counting else ROUNDS))]
            started = meter.start()
            for env in envs:
                rcb.call(app, env)
            spent = meter.stop(started)
            rounds.append(spent / len(envs) * 1e6)
        out[op] = float(n) if counting else statistics.median(rounds)
        meter.dump(op)
    return out


def server(args: argparse.Namespace) -> dict[str, float]:
    """Server CPU µs per request of every operation (see the module docstring)."""
    import http.client
    import signal
    import socket

    from server_cpu import group_cpu

    checkout = Path(__file__).resolve().parents[1]
    work = Path(tempfile.mkdtemp(prefix="spoolq-sns-server-", dir=args.dir))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYTHONPATH"] = str(checkout / "service")
    cmd = [sys.executable, "-c", "import sys; from spoolq.cli import main; sys.exit(main())", "serve", "--root",
           str(work / "root"), "--port", str(port), "--workers", "1"] + (["--flush", args.flush] if args.flush else [])
    (work / "root").mkdir()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        deadline = time.monotonic() + 30
        while True:
            try:
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        class Remote:
            """The app's interface to ``run``: a WSGI environ sent as an HTTP request."""

            def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
                headers = {k[5:].replace("_", "-").title(): v for k, v in environ.items() if k.startswith("HTTP_")}
                headers["Content-Type"] = environ.get("CONTENT_TYPE", "")
                conn.request(environ["REQUEST_METHOD"], environ["PATH_INFO"], environ["wsgi.input"].read(), headers)
                reply = conn.getresponse()
                body = reply.read()
                start_response(f"{reply.status} {reply.reason}", [])
                return [body]

        class GroupMeter(rcb.Meter):
            def start(self) -> float:
                return group_cpu(proc.pid)

            def stop(self, started: float) -> float:
                return group_cpu(proc.pid) - started

        return run(Remote(), args.requests, args.ops.split(","), GroupMeter(None))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


def instructions(args: argparse.Namespace) -> dict[str, float]:
    subprocess.run([str(Path(__file__).resolve().parents[1] / "scripts" / "system-deps"), "profiling"], check=False)
    work = Path(tempfile.mkdtemp(prefix="spoolq-sns-instr-"))
    try:
        helper = rcb.build_helper(work)
        out_dir = work / "cg"
        out_dir.mkdir()
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--instr-atstart=no", "--dump-instr=no",
               "--compress-strings=no", "--compress-pos=no", f"--callgrind-out-file={out_dir}/cg.%p",
               sys.executable, __file__, "--_child-helper", str(helper), "--requests", str(args.requests),
               "--ops", args.ops]
        child = subprocess.run(cmd, capture_output=True, text=True)
        if child.returncode != 0:
            sys.stderr.write(child.stderr[-4000:])
            raise SystemExit(f"the callgrind run failed ({child.returncode})")
        counts = json.loads(child.stdout.strip().splitlines()[-1])
        totals: dict[str, int] = {}
        for f in out_dir.iterdir():
            text = f.read_text(errors="replace")
            trigger = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
            total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
            if trigger and total:
                totals[trigger.group(1).strip()] = int(total.group(1))
        return {op: totals[op] / n for op, n in counts.items() if n and op in totals}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(out: dict[str, float], unit: str, what: str) -> None:
    print(what)
    anchor = out.get("sqs_send")
    for op, value in out.items():
        ratio = f"  ({value / anchor:.2f}x sqs_send)" if anchor else ""
        print(f"  {op:20s} {value:>14,.0f} {unit}{ratio}")
    if anchor and "publish_10" in out:
        print(f"goal: publish_10 <= 3x sqs_send: {out['publish_10'] / anchor:.2f}x")
    if "publish_10_filter20" in out and "publish_10_attrs" in out:
        extra = out["publish_10_filter20"] / out["publish_10_attrs"] - 1
        print(f"goal: a 20-condition policy adds < 5 % to a publish to 10 queues: {extra * 100:+.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=None, help="requests per operation (1,000; 200 with --instructions)")
    ap.add_argument("--instructions", action="store_true", help="instructions per request under callgrind")
    ap.add_argument("--flush", choices=("syncfs", "journal", "fsync"), help="durable, with this flush")
    ap.add_argument("--dir", type=Path, help="where the data directory goes (default: /dev/shm)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--server", action="store_true", help="server CPU per request through a real spoolq serve")
    ap.add_argument("--_child-helper", dest="child_helper", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.requests is None:
        args.requests = 200 if args.instructions or args.child_helper else 1000
    if args.server:
        mode = f"--flush {args.flush}" if args.flush else "the server's default flush"
        report(server(args), "µs", f"server CPU µs per request, whole process group ({mode}, "
               f"load {os.getloadavg()[0]:.1f})")
        return
    if args.instructions:
        report(instructions(args), "instructions", f"instructions per request, serving thread, under callgrind "
               f"({args.requests} requests each; load {os.getloadavg()[0]:.1f}, which does not change them)")
        return
    shm = "/dev/shm"
    where = args.dir or (shm if os.access(shm, os.W_OK) else None)
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-sns-", dir=where))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(tmp / "metrics")
    (tmp / "metrics").mkdir()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
    try:
        from spoolq.http.app import create_app
        from spoolq.settings.server import Settings

        durable = {"fsync": True, "flush": args.flush, "force_flush": True} if args.flush else {"fsync": False}
        app = create_app(Settings(root=tmp / "root", node_id="bench", **durable))
        started = time.monotonic()
        out = run(app, args.requests, args.ops.split(","), rcb.Meter(args.child_helper))
        app.extensions["spoolq"].close()
        if args.child_helper:
            print(json.dumps(out))
            return
        mode = f"--flush {args.flush}" if args.flush else "--fsync never"
        load = "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
        report(out, "µs", f"CPU µs per request, serving thread ({mode}; {load}; {time.monotonic() - started:.0f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
