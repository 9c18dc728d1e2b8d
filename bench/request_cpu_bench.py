#!/usr/bin/env python3
"""CPU time of one request through the WSGI app, per operation, next to a trivial Flask endpoint.

    python bench/request_cpu_bench.py                    # every operation, 2,000 requests each
    python bench/request_cpu_bench.py --profile emodb_send   # plus a cProfile of that operation
    python bench/request_cpu_bench.py --service OTHER/service  # another checkout's code (before/after)
    python bench/request_cpu_bench.py --instructions     # instructions per request, under callgrind
    python bench/request_cpu_bench.py --instructions --compare OTHER/service  # both, side by side
    python bench/request_cpu_bench.py --instructions --check-baseline   # against bench/instructions-baseline.json
    python bench/request_cpu_bench.py --instructions --write-baseline   # write it (a change meant to cost more)
    python bench/request_cpu_bench.py --syscalls         # system calls per request, under strace
    python bench/request_cpu_bench.py --syscalls --flush journal --dir /var/tmp  # a durable mode, on a disk

Calls the app object the way gunicorn's worker does (one WSGI environ per request, the body
iterated and closed), in this process, with ``--fsync never`` on a data directory in a temp dir
(on tmpfs, ``/dev/shm``, when there is one: the disk's own work is not the app's) and prometheus-client in multiprocess mode (as ``spoolq serve`` runs it). What is timed is the
CPU time of the thread serving the requests (``time.thread_time``: the store's background
threads, such as the one unlinking acknowledged files, are not counted) per request, the median
of 5 rounds (per poll and per ack: the median request), so the figures move far less with the
load of the machine than wall-clock request rates do. ``trivial`` is ``POST /hello`` answering
``{"success":true}`` from a bare Flask app: what Flask and werkzeug cost by themselves.

**Instructions** (``--instructions``): the same requests, in the same order, run under valgrind's
callgrind, which counts the machine instructions the serving thread executes from the first
request of an operation's timed round to its last (collection switched on and off around each
request by a client request, so neither start-up, nor warm-up, nor the store's background
threads, nor another operation is counted). Instructions do not depend on what else the machine
runs: a rerun gives the same figures within a fraction of a percent, on a loaded machine too,
which makes them the figure to compare code against code. ``--compare`` runs another checkout's
code in a second process under callgrind and prints both columns. Needs valgrind, its headers
and a C compiler (``scripts/system-deps profiling``): a 20-line helper that issues the client
requests is compiled into a temp dir. Under callgrind a request runs ~50x slower, so the default
is fewer requests (``--requests 400``). So that a rerun gives the same counts on a busy machine,
the counted process seeds its string hashes (``PYTHONHASHSEED=0``), collects and freezes the heap
before each operation's counted requests (:meth:`Meter.settle`), and runs on clocks that advance
with its CPU time, not the wall clock (:func:`cpu_clocks`). ``--check-baseline`` and
``--write-baseline`` compare the counts with, or write them as, the baseline CI holds them to
(``bench/instructions_baseline.py``, ``tests/bench``).

**System calls** (``--syscalls``): the same requests under ``strace -f``; each operation's calls of
the serving thread between its first and last request, per request and by name, and the flushes
(``fsync``, ``fdatasync``, ``syncfs``) any thread made meanwhile. ``--flush`` and ``--dir`` run
the store in a durable mode on a chosen disk instead of ``--fsync never`` on tmpfs.

Operations: EmoDB ``send`` and ``sendbatch`` (10 messages, to a queue of its own), MQ send, SQS JSON
``SendMessage`` and ``SendMessageBatch`` (10 entries, to a queue of its own),
EmoDB ``poll`` (limit 10) and ``ack`` (the 10 ids just polled), SQS ``ReceiveMessage`` (10, with a
visibility timeout) and ``DeleteMessageBatch`` (their 10 receipt handles), 1 KiB bodies, open mode; and
``store_send``, the store's ``send`` of the same message called directly (its share of a send). A few
hundred requests of each run first (warm-up: children of labelled metrics, caches, imports).
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import gc
import io
import json
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import instructions_baseline  # beside this script

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


_HELPER_C = r"""
#include <valgrind/callgrind.h>
void spoolq_collect_on(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void spoolq_collect_off(void) { CALLGRIND_TOGGLE_COLLECT; }
void spoolq_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
"""


#: under strace, the serving thread marks each counted stretch with a stat of a path under this
MARK = "/nonexistent-spoolq-bench-mark"


class Meter:
    """What a timed stretch is measured with: CPU time of this thread (``time.thread_time``); under
    callgrind, instructions (collection on for the stretch, a dump per operation); under strace,
    a marker system call at each end of a stretch and at the end of an operation."""

    def __init__(self, helper: str | None, marks: bool = False) -> None:
        self._lib = ctypes.CDLL(helper) if helper else None
        self._marks = marks

    @property
    def counting(self) -> bool:
        return self._lib is not None or self._marks

    @staticmethod
    def _mark(what: str) -> None:
        try:
            os.stat(f"{MARK}/{what}")
        except OSError:
            pass

    def start(self) -> float:
        if self._lib is not None:
            self._lib.spoolq_collect_on()
            return 0.0
        if self._marks:
            self._mark("on")
            return 0.0
        return time.thread_time()

    def stop(self, started: float) -> float:
        if self._lib is not None:
            self._lib.spoolq_collect_off()
            return 0.0
        if self._marks:
            self._mark("off")
            return 0.0
        return time.thread_time() - started

    def settle(self) -> None:
        """Before an operation's counted requests (when counting): collect every generation and
        freeze what survives (``gc.freeze``), so each operation starts from an empty young
        generation and a full collection walks only what the counted requests made; otherwise
        whether the heap of the warm-up is walked inside a stretch moves a row by percents."""
        if self.counting:
            gc.collect()
            gc.freeze()

    def dump(self, op: str) -> None:
        if self._lib is not None:
            self._lib.spoolq_dump(op.encode())
        if self._marks:
            self._mark(f"dump/{op}")


#: under callgrind, a second of the clocks :func:`cpu_clocks` makes is this many seconds of CPU
CPU_SECONDS_PER_SECOND = 50.0


def cpu_clocks() -> None:
    """Under callgrind (before the service is imported): ``time.time`` and ``time.monotonic`` advance
    with this process's CPU time, one second per :data:`CPU_SECONDS_PER_SECOND` (callgrind runs
    code about that much slower), not with the wall clock.

    Work done once a second of the clock (a new bucket each second of sends, the claim time
    budget of a poll, background threads waking) then falls at the same requests in every run,
    however busy the machine is: by the wall clock, a loaded machine gives each request more
    seconds, and moved rows by several percent from run to run."""
    wall, mono, cpu, process_time = time.time(), time.monotonic(), time.process_time(), time.process_time
    time.time = lambda: wall + (process_time() - cpu) / CPU_SECONDS_PER_SECOND
    time.monotonic = lambda: mono + (process_time() - cpu) / CPU_SECONDS_PER_SECOND


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
    sqs_batch = json.dumps({"QueueUrl": "http://127.0.0.1:8000/123456789012/sqb", "Entries": [
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


def run(app: Any, trivial: Any, n: int, profile: str | None, ops: list[str],
        meter: Meter | None = None) -> dict[str, float]:
    """µs of CPU per request of every operation (under callgrind: the requests counted per
    operation, and a dump per operation that holds their instructions)."""
    meter = meter or Meter(None)
    counting = meter.counting
    rounds_of = 1 if counting else ROUNDS
    out: dict[str, float] = {}
    for sqs_queue in ("sq", "sqb"):  # batches go to a queue of their own (as EmoDB's): receives list only sq
        sqs_create = environ("POST", "/", json.dumps({"QueueName": sqs_queue}).encode(), headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.CreateQueue"})
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
        meter.settle()
        for _ in range(rounds_of):
            envs = [make() for _ in range(n // rounds_of)]
            if prof:
                prof.enable()
            started = meter.start()
            for env in envs:
                call(target, env)
            spent = meter.stop(started)
            if prof:
                prof.disable()
            rounds.append(spent / len(envs) * 1e6)
        out[op] = statistics.median(rounds) if not counting else float(n // rounds_of)
        meter.dump(op)
        if prof:
            report(prof, op)
    if "store_send" in ops:  # the store's own share of a send: the same message, no HTTP
        from spoolq.store.model import OutgoingMessage, QueueKind

        store = app.extensions["spoolq"].store()
        store = getattr(store, "wrapped", store)  # a checkout from before the store told its listeners
        message = OutgoingMessage(body=json.dumps(BODY).encode())
        rounds = []
        meter.settle()
        prof = cProfile.Profile(time.thread_time) if profile == "store_send" else None
        for _ in range(rounds_of):
            if prof:
                prof.enable()
            started = meter.start()
            for _ in range(n // rounds_of):
                store.send("q", message, create=QueueKind.STANDARD)
            spent = meter.stop(started)
            if prof:
                prof.disable()
            rounds.append(spent / (n // rounds_of) * 1e6)
        out["store_send"] = statistics.median(rounds) if not counting else float(n // rounds_of)
        meter.dump("store_send")
        if prof:
            report(prof, "store_send")
    sqs_url = "http://127.0.0.1:8000/123456789012/sq"
    sqs = {"Content-Type": "application/x-amz-json-1.0"}
    pairs = [  # (op, names of the two rows, profile keys, take, refs of its answer, give refs back, one send)
        ("poll", ("emodb_poll10", "emodb_ack10"), ("poll", "ack"),
         lambda: environ("GET", "/queue/1/q/poll", query="limit=10&ttl=60"),
         lambda body: [m["id"] for m in json.loads(body)],
         lambda refs: environ("POST", "/queue/1/q/ack", json.dumps(refs).encode(),
                              headers={"Content-Type": "application/json"}),
         requests_of("emodb_send")),
        ("sqs_receive", ("sqs_receive10", "sqs_delete10"), ("receive", "delete"),
         lambda: environ("POST", "/", json.dumps({"QueueUrl": sqs_url, "MaxNumberOfMessages": 10,
                                                  "VisibilityTimeout": 60}).encode(),
                         headers={**sqs, "X-Amz-Target": "AmazonSQS.ReceiveMessage"}),
         lambda body: [m["ReceiptHandle"] for m in json.loads(body).get("Messages", [])],
         lambda refs: environ("POST", "/", json.dumps({"QueueUrl": sqs_url, "Entries": [
             {"Id": str(i), "ReceiptHandle": r} for i, r in enumerate(refs)]}).encode(),
             headers={**sqs, "X-Amz-Target": "AmazonSQS.DeleteMessageBatch"}),
         requests_of("sqs_send")),
    ]
    for op, names, keys, take, refs_of, give, send in pairs:
        if op in ops:
            out.update(_take_and_give(app, meter, n, profile, names, keys, take, refs_of, give, send))
    return out


def _take_and_give(app: Any, meter: Meter, n: int, profile: str | None, names: tuple[str, str],
                   keys: tuple[str, str], take: Callable[[], dict[str, Any]], refs_of: Callable[[bytes], list[str]],
                   give: Callable[[list[str]], dict[str, Any]], send: Callable[[], dict[str, Any]]) -> dict[str, float]:
    """Rows of a consumer's two requests (poll 10 then ack them; receive 10 then delete them), on
    messages sent beforehand (and sent again between the two passes under callgrind)."""
    counting = meter.counting
    for _ in range(min(n, 2000) + 300):  # what the takes below take (the sends above may not have run)
        call(app, send())
    takes: list[float] = []
    gives: list[float] = []
    prof = cProfile.Profile(time.thread_time) if profile in keys else None
    # under callgrind the takes are counted in one pass and the gives in a second (one dump each)
    for counted in (("take", "give") if counting else ("both",)):
        if counting and counted == "give":  # refill what the first pass took
            for _ in range(len(takes) * 10):
                call(app, send())
        meter.settle()
        for _ in range(min(n, 2000) // 10):
            env = take()
            if prof and profile == keys[0]:
                prof.enable()
            t0 = meter.start() if counted != "give" else 0.0
            status, body = call(app, env)
            spent_take = meter.stop(t0) if counted != "give" else 0.0
            if prof:
                prof.disable()
            assert status[:1] == "2", (names[0], status)
            refs = refs_of(body)
            if not refs:
                break
            env = give(refs)
            if prof and profile == keys[1]:
                prof.enable()
            t2 = meter.start() if counted != "take" else 0.0
            status, _ = call(app, env)
            spent_give = meter.stop(t2) if counted != "take" else 0.0
            if prof:
                prof.disable()
            assert status[:1] == "2", (names[1], status)
            if counted != "give":
                takes.append(spent_take)
            if counted != "take":
                gives.append(spent_give)
        if counting:
            meter.dump(names[0] if counted == "take" else names[1])
    if prof:
        report(prof, profile or "")
    if counting:
        return {names[0]: float(len(takes)), names[1]: float(len(gives))}
    return {names[0]: statistics.median(takes) * 1e6, names[1]: statistics.median(gives) * 1e6}


def report(prof: cProfile.Profile, op: str) -> None:
    s = io.StringIO()
    stats = pstats.Stats(prof, stream=s)
    stats.sort_stats("tottime").print_stats(35)
    stats.sort_stats("cumulative").print_stats(45)
    print(f"--- cProfile of {op} ---\n{s.getvalue()}", file=sys.stderr)


def build_helper(where: Path) -> Path:
    """The shared library whose functions issue callgrind's client requests."""
    source, lib = where / "cg_helper.c", where / "cg_helper.so"
    source.write_text(_HELPER_C)
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(source)], check=True)
    return lib


def instructions_of(service: Path, requests: int, ops: str, work: Path) -> tuple[dict[str, float], list[str]]:
    """Instructions per request of every operation: this script run under callgrind on
    ``service``'s code, one dump per operation; the serving thread's instructions over the number
    of requests the child reports for it. Also the top-level modules the child had imported.

    The child's string hashes are seeded (``PYTHONHASHSEED=0``): with random seeds, sets and
    dicts of strings are laid out differently each run and the counts move by several tenths of
    a percent."""
    out_dir = work / f"cg-{len(list(work.glob('cg-*')))}"
    out_dir.mkdir()
    helper = build_helper(work) if not (work / "cg_helper.so").exists() else work / "cg_helper.so"
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--instr-atstart=no",
           "--dump-instr=no", "--compress-strings=no", "--compress-pos=no",
           f"--callgrind-out-file={out_dir}/cg.%p", sys.executable, __file__, "--_child-helper", str(helper),
           "--service", str(service), "--requests", str(requests), "--ops", ops]
    child = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if child.returncode != 0:
        sys.stderr.write(child.stderr[-4000:])
        raise SystemExit(f"the callgrind run failed ({child.returncode})")
    report = json.loads(child.stdout.strip().splitlines()[-1])
    counts = report["counts"]
    totals: dict[str, int] = {}
    for f in out_dir.iterdir():
        text = f.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if trigger and total:
            totals[trigger.group(1).strip()] = int(total.group(1))
    return {op: totals[op] / n for op, n in counts.items() if n and op in totals}, report["modules"]


_STRACE_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(\w+)")
FLUSHES = ("fsync", "fdatasync", "syncfs", "sync_file_range")


def syscalls_of(args: argparse.Namespace, work: Path) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """System calls per request of every operation, by name (the serving thread), and the flushes
    any thread made during each operation; this script under ``strace -f``."""
    trace = work / "strace.out"
    cmd = ["strace", "-f", "-qq", "-o", str(trace), sys.executable, __file__, "--_child-marks",
           "--service", str(args.service.resolve()), "--requests", str(args.requests), "--ops", args.ops]
    if args.flush:
        cmd += ["--flush", args.flush]
    if args.dir:
        cmd += ["--dir", str(args.dir)]
    child = subprocess.run(cmd, capture_output=True, text=True)
    if child.returncode != 0:
        sys.stderr.write(child.stderr[-4000:])
        raise SystemExit(f"the strace run failed ({child.returncode})")
    counts = json.loads(child.stdout.strip().splitlines()[-1])["counts"]
    per_op: dict[str, dict[str, float]] = {}
    flushes: dict[str, int] = {}
    server: str | None = None
    on = False
    calls: dict[str, int] = {}
    flushed = 0
    with trace.open(errors="replace") as f:
        for line in f:
            m = _STRACE_LINE.match(line)
            if not m or "resumed>" in line:
                continue
            tid, name = m.groups()
            if MARK in line:
                server = tid
                what = line.split(MARK + "/", 1)[1].split('"', 1)[0]
                if what == "on":
                    if not on and not calls:  # an operation's first request: its warm-up is over
                        flushed = 0
                    on = True
                elif what == "off":
                    on = False
                elif what.startswith("dump/"):
                    op = what[5:]
                    n = counts.get(op) or 1
                    per_op[op] = {k: v / n for k, v in sorted(calls.items(), key=lambda kv: -kv[1])}
                    flushes[op] = flushed
                    calls, flushed = {}, 0
                continue
            if server is None:
                continue
            if name in FLUSHES:
                flushed += 1
            if on and tid == server:
                calls[name] = calls.get(name, 0) + 1
    return per_op, flushes


def main_syscalls(args: argparse.Namespace) -> None:
    subprocess.run([str(Path(__file__).resolve().parents[1] / "scripts" / "system-deps"), "profiling"], check=False)
    work = Path(tempfile.mkdtemp(prefix="spoolq-strace-"))
    try:
        per_op, flushes = syscalls_of(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mode = f"--flush {args.flush}" if args.flush else "--fsync never"
    print(f"system calls per request, serving thread, under strace ({args.requests} requests per operation; "
          f"{mode}; data in {args.dir or 'tmpfs'})")
    for op, calls in per_op.items():
        total = sum(calls.values())
        top = ", ".join(f"{k} {v:.1f}" for k, v in calls.items() if v >= 0.05)
        print(f"  {op:16s} {total:6.1f}  ({top}); flushes by any thread: {flushes.get(op, 0)}")


def main_instructions(args: argparse.Namespace) -> None:
    subprocess.run([str(Path(__file__).resolve().parents[1] / "scripts" / "system-deps"), "profiling"], check=False)
    if args.check_baseline:
        baseline = instructions_baseline.load(args.check_baseline)
        args.requests, args.ops = baseline["requests"], instructions_baseline.ops_of(baseline["rows"])
    work = Path(tempfile.mkdtemp(prefix="spoolq-instr-"))
    try:
        services = [args.service.resolve()] + ([args.compare.resolve()] if args.compare else [])
        counted = [instructions_of(svc, args.requests, args.ops, work) for svc in services]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    columns = [rows for rows, _ in counted]
    if args.write_baseline or args.check_baseline:
        env = instructions_baseline.environment(counted[0][1])
        if args.write_baseline:
            instructions_baseline.write_and_show(args.write_baseline, columns[0], args.requests, env)
        else:
            instructions_baseline.check_and_show(args.check_baseline, columns[0], env)  # exits 1 when dearer
        return
    print(f"instructions per request, serving thread, under callgrind ({args.requests} requests per "
          f"operation; load {os.getloadavg()[0]:.1f}, which does not change these counts)")
    head = "".join(f"  {str(svc)[-28:]:>28s}" for svc in services)
    print(f"  {'operation':16s}{head}" + ("   after/before" if args.compare else ""))
    first = columns[0]
    for op in first:
        cells = "".join(f"  {c.get(op, float('nan')):>28,.0f}" for c in columns)
        trivial = first.get("trivial")
        ratio = f"  ({first[op] / trivial:.1f}x trivial)" if trivial and not args.compare else ""
        cmp = f"   {first[op] / columns[1][op]:.3f}" if args.compare and op in columns[1] else ""
        print(f"  {op:16s}{cells}{cmp}{ratio}")



def server_settings_class() -> Any:
    """The server's ``Settings`` of the checkout on ``sys.path`` (``--service``, ``--compare``): its
    module moved twice, so an older checkout has it at an older path."""
    import importlib

    for module in ("spoolq.settings.server", "spoolq.server_settings", "spoolq.settings"):
        try:
            return importlib.import_module(module).Settings
        except (ImportError, AttributeError):
            continue
    raise ImportError("no spoolq Settings in the checkout on sys.path")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=None,
                    help="timed requests per operation (2,000; 400 with --instructions)")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions per request under callgrind instead of timing")
    ap.add_argument("--write-baseline", nargs="?", type=Path, const=instructions_baseline.BASELINE,
                    help="with --instructions: write the counts as the baseline (default "
                         "bench/instructions-baseline.json; --requests defaults to "
                         f"{instructions_baseline.REQUESTS} then)")
    ap.add_argument("--check-baseline", nargs="?", type=Path, const=instructions_baseline.BASELINE,
                    help="with --instructions: count the baseline's rows with its number of requests and exit 1 "
                         f"when one is more than {instructions_baseline.TOLERANCE * 100:.0f} %% dearer")
    ap.add_argument("--compare", type=Path, help="with --instructions: another service/ directory, "
                    "counted in a second run and printed beside (after/before = this one over that one)")
    ap.add_argument("--syscalls", action="store_true",
                    help="count system calls per request under strace instead of timing")
    ap.add_argument("--flush", choices=("syncfs", "journal", "fsync"),
                    help="run the store durable with this flush (default: --fsync never)")
    ap.add_argument("--dir", type=Path, help="where the data directory goes (default: /dev/shm, a tmpfs)")
    ap.add_argument("--_child-helper", dest="child_helper", help=argparse.SUPPRESS)
    ap.add_argument("--_child-marks", dest="child_marks", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--service", type=Path, default=Path(__file__).resolve().parents[1] / "service",
                    help="the service/ directory whose code is measured")
    ap.add_argument("--profile", help="print a cProfile of one operation (trivial, emodb_send, "
                    "emodb_sendbatch, mq_send, sqs_send, sqs_sendbatch, store_send, poll, ack, receive, delete)")
    ap.add_argument("--ops", default="trivial,emodb_send,emodb_sendbatch,mq_send,sqs_send,sqs_sendbatch,store_send,"
                                     "poll,sqs_receive",
                    help="comma list of operations (poll: poll then ack the ids; sqs_receive: ReceiveMessage of "
                         "10 then DeleteMessageBatch of their receipts; store_send: the store's send alone, in "
                         "this thread, no HTTP)")
    args = ap.parse_args()
    if args.requests is None and args.write_baseline:
        args.requests = instructions_baseline.REQUESTS
    if args.requests is None:
        args.requests = 400 if args.instructions or args.child_helper or args.syscalls or args.child_marks else 2000
    if args.instructions:
        main_instructions(args)
        return
    if args.syscalls:
        main_syscalls(args)
        return
    shm = "/dev/shm"  # tmpfs when there is one: the file system's own work is not the app's
    where = args.dir or (shm if os.access(shm, os.W_OK) else None)
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-reqcpu-", dir=where))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(tmp / "metrics")
    (tmp / "metrics").mkdir()
    if args.child_helper:
        cpu_clocks()
    sys.path.insert(0, str(args.service.resolve()))
    try:
        from spoolq.http.app import create_app
        Settings = server_settings_class()

        durable = {"fsync": True, "flush": args.flush, "force_flush": True} if args.flush else {"fsync": False}
        app = create_app(Settings(root=tmp / "root", node_id="bench", **durable))
        meter = Meter(args.child_helper, marks=args.child_marks)
        out = run(app, trivial_app(), args.requests, args.profile, args.ops.split(","), meter)
        app.extensions["spoolq"].close()
        if args.child_helper or args.child_marks:  # under callgrind: the requests counted per operation, for the parent
            modules = sorted({m.partition(".")[0] for m in sys.modules})
            print(json.dumps({"counts": out, "modules": modules}))
            return
        load = "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
        mode = f"--flush {args.flush}" if args.flush else "--fsync never"
        print(f"CPU µs per request ({args.service}; {mode}; {load})")
        for op, us in out.items():
            ratio = f"  ({us / out['trivial']:.1f}x trivial)" if "trivial" in out else ""
            print(f"  {op:16s} {us:8.0f} µs{ratio}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
