#!/usr/bin/env python3
"""The path of one request through spoolq's own code: which modules it runs in, and how often the
answer of a call comes back across a module boundary.

    python bench/request_path.py                        # an SQS SendMessage (JSON), counted once
    python bench/request_path.py --op sqs_sendbatch     # another operation of request_cpu_bench.py
    python bench/request_path.py --list                 # plus the modules, and each crossing return
    python bench/request_path.py --service OTHER/service  # another checkout's code (before/after)

Builds the app as ``bench/request_cpu_bench.py`` does (in this process, ``--fsync never`` on a temp
data directory, prometheus-client in multiprocess mode), sends a few hundred requests of the
operation first (warm-up: imports, caches, the first-time branches), then runs one more under
``sys.setprofile`` and counts, over the Python functions of the ``spoolq`` package that run:

* **modules**: the distinct ``spoolq.*`` modules at least one of whose functions is called;
* **cross-module returns**: returns from a function of one ``spoolq`` module into a function of
  another ``spoolq`` module (a value, or just control, handed back across a module boundary; a
  return into Flask, werkzeug or the standard library is not counted, a generator's ``yield``
  back to its consumer is);
* **calls**: every ``spoolq`` function call, for scale.

Counting is deterministic for a given code and operation: the request is the same every time and
the warm-up takes every first-time branch (a rerun gives the same figures). Two runs over two
checkouts (``--service``) compare code against code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from request_cpu_bench import call, environ, requests_of

WARM_UP = 300


def _module(frame: FrameType | None) -> str:
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def trace_one(app: Any, env: dict[str, Any]) -> tuple[Counter[str], Counter[tuple[str, str]], int, str]:
    """Run one request under a profile hook: calls per spoolq module, returns across spoolq modules
    per (function returning, module returned into), the number of calls, and the response status."""
    calls: Counter[str] = Counter()
    crossings: Counter[tuple[str, str]] = Counter()

    def hook(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            module = _module(frame)
            if module.startswith("spoolq"):
                calls[module] += 1
        elif event == "return":
            module = _module(frame)
            if module.startswith("spoolq"):
                into = _module(frame.f_back)
                if into.startswith("spoolq") and into != module:
                    crossings[(f"{module}.{frame.f_code.co_qualname}", into)] += 1

    sys.setprofile(hook)
    try:
        status, _body = call(app, env)
    finally:
        sys.setprofile(None)
    return calls, crossings, sum(calls.values()), status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="sqs_send",
                    help="the request (emodb_send, emodb_sendbatch, mq_send, sqs_send, sqs_sendbatch)")
    ap.add_argument("--service", type=Path, default=Path(__file__).resolve().parents[1] / "service",
                    help="the service/ directory whose code is counted")
    ap.add_argument("--list", action="store_true", help="print the modules and every crossing return")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = ap.parse_args()
    shm = "/dev/shm"
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-path-", dir=shm if os.access(shm, os.W_OK) else None))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(tmp / "metrics")
    (tmp / "metrics").mkdir()
    sys.path.insert(0, str(args.service.resolve()))
    try:
        from spoolq.http.app import create_app
        from spoolq.settings.server import Settings

        app = create_app(Settings(root=tmp / "root", node_id="bench", fsync=False))
        sqs = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.CreateQueue"}
        assert call(app, environ("POST", "/", json.dumps({"QueueName": "sq"}).encode(), headers=sqs))[0][:1] == "2"
        assert call(app, environ("PUT", "/mq/m"))[0][:1] == "2"
        make = requests_of(args.op)
        for _ in range(WARM_UP):
            status, _ = call(app, make())
            assert status[:1] == "2", status
        calls, crossings, n_calls, status = trace_one(app, make())
        assert status[:1] == "2", status
        app.extensions["spoolq"].close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures = {"op": args.op, "modules": len(calls), "cross_module_returns": sum(crossings.values()),
               "calls": n_calls}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{args.op} ({args.service}): {figures['modules']} spoolq modules, "
          f"{figures['cross_module_returns']} cross-module returns, {n_calls} calls")
    if args.list:
        print("\ncalls per module:")
        for module, n in sorted(calls.items()):
            print(f"  {n:4d}  {module}")
        print("\nreturns across modules (function -> the module it returns into):")
        for (src, dst), n in sorted(crossings.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:4d}  {src} -> {dst}")


if __name__ == "__main__":
    main()
