#!/usr/bin/env python3
"""HTTP durable send through gunicorn, driven by ``wrk`` (a C load generator), against a trivial
Flask endpoint on the same gunicorn settings, side by side in one run (never from pytest).

    python bench/http_wrk_bench.py                       # 8 and 64 connections, 5 s each
    python bench/http_wrk_bench.py --seconds 3 --conns 8 # shorter
    python bench/http_wrk_bench.py --compare OLD/service # before/after: both served, cells back to back
    python bench/http_wrk_bench.py --runs 3 --modes default --doors EmoDB --conns 64 --root /mnt/x

Needs ``wrk`` (``scripts/system-deps wrk``; the script calls it). Starts, on free 127.0.0.1 ports:
the trivial app (``POST /hello`` answering ``{"success":true}``) and one ``spoolq serve`` per mode (``--modes``:
journal, syncfs, never by default), each with the default workers and threads unless given; sends 1 KiB
messages through the EmoDB (``POST /queue/1/q/send``), MQ (``POST /mq/q/messages``) and SQS JSON
(``AmazonSQS.SendMessage``) doors, open mode (no keys). Prints requests/s, p50/p99 and the ratio
to the trivial endpoint measured next to it (trivial cells are re-measured before each door so
a change of load hits both). Load (``uptime``) is printed with every figure, and so is the CPU
time each server's processes spent per request during the cell (``server_cpu.py``), with the
trivial server's over it (the CPU ratio: what the rate ratio would be if CPU alone set it).

Sends per flush: requests over the group-commit flushes the server's processes ran during the
cell (``spoolq_flush_seconds_count`` of ``/metrics``, every worker's together; ``-`` without a
flush). Sends per disk flush: requests over the cache flushes the data directory's block device
completed during the cell (``/sys/dev/block/M:m/stat``, its 16th field; ``-`` where the kernel
does not count them): what one flush covered across the whole node, whoever asked for it.
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
from pathlib import Path

import requests

CHECKOUT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CHECKOUT))
sys.path.insert(0, str(CHECKOUT / "bench"))
from server_cpu import group_cpu  # noqa: E402

BODY = "x" * 1000


def free_port() -> int:
    from tests.e2e.spoolq_server import free_port as fp

    return fp()


def wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode})")
        try:
            requests.get(url, timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def lua(method: str, body: str, headers: dict[str, str]) -> str:
    hs = "".join(f'wrk.headers["{k}"] = {json.dumps(v)}\n' for k, v in headers.items())
    return f'wrk.method = "{method}"\nwrk.body = {json.dumps(body)}\n{hs}'


def wrk(url: str, script: str, conns: int, seconds: float, tmp: Path,
        server: int) -> tuple[float, float, float, int, float, int]:
    """(requests/s, p50 ms, p99 ms, non-2xx, the server's CPU µs per request, requests completed)
    of one wrk run against the server whose process group is ``server``."""
    path = tmp / f"s{abs(hash(script))}.lua"
    path.write_text(script)
    cpu = group_cpu(server)
    out = subprocess.run(["wrk", "-t", "2", "-c", str(conns), "-d", f"{max(1, round(seconds))}s", "--latency", "-s", str(path), url],
                         capture_output=True, text=True, check=True).stdout
    cpu = group_cpu(server) - cpu
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]

    def pct(p: str) -> float:
        m = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rps, pct("50"), pct("99"), int(bad.group(1)) if bad else 0, cpu / max(done, 1) * 1e6, done


def process_flushes(url: str) -> float:
    """Group-commit flushes the server's processes report so far (``spoolq_flush_seconds_count``)."""
    try:
        text = requests.get(url + "/metrics", timeout=10).text
    except requests.RequestException:
        return float("nan")
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("spoolq_flush_seconds_count"))


def disk_flushes(path: Path) -> float:
    """Cache flushes the block device holding ``path`` has completed since it was attached."""
    dev = os.stat(path).st_dev
    try:
        fields = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat").read_text().split()
        return float(fields[15])
    except (OSError, IndexError, ValueError):
        return float("nan")


def per(requests_done: float, flushes: float) -> str:
    return f"{requests_done / flushes:.1f}" if flushes and flushes == flushes else "-"


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def _door_request(door: str, url: str) -> tuple[str, str]:
    """(url, wrk script) of one send through ``door``."""
    if door == "EmoDB":
        return url + "/queue/1/q/send", lua("POST", json.dumps(BODY), {"Content-Type": "application/json"})
    if door == "MQ":
        return url + "/mq/q/messages", lua("POST", BODY, {"Content-Type": "application/octet-stream"})
    if door == "SQS JSON":
        return url + "/", lua("POST", json.dumps({"QueueUrl": f"{url}/000000000000/q", "MessageBody": BODY}),
                              {"X-Amz-Target": "AmazonSQS.SendMessage", "Content-Type": "application/x-amz-json-1.0"})
    raise SystemExit(f"unknown door {door!r} (EmoDB, MQ, SQS JSON)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=1, help="passes over every cell (the table then has medians)")
    ap.add_argument("--conns", default="8,64")
    ap.add_argument("--modes", default="journal,syncfs,never",
                    help="servers to run: journal / syncfs / fsync (--flush with fsync always), "
                         "default (the served version's default flush), never (--fsync never)")
    ap.add_argument("--doors", default="EmoDB,MQ,SQS JSON")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--service", default=str(CHECKOUT / "service"),
                    help="the service/ dir whose spoolq to serve (e.g. an older checkout's, for before/after)")
    ap.add_argument("--compare", default=None,
                    help="another service/ dir served next to --service (same modes); each cell then runs "
                         "trivial, --service, --compare back to back, so before/after share one run")
    ap.add_argument("--root", default=None, help="parent of the data dirs (default: beside the checkout)")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        subprocess.run([str(CHECKOUT / "scripts/system-deps"), "wrk"], check=True)
    tmp = Path(tempfile.mkdtemp(prefix="spoolq-wrk-", dir=args.root or CHECKOUT.parent))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    procs: list[subprocess.Popen[bytes]] = []
    rows: list[str] = []
    ratios: dict[tuple[str, str, str, int], list[float]] = {}  # (door, version, mode, conns) -> per run
    try:
        tport = free_port()
        procs.append(subprocess.Popen([sys.executable, str(CHECKOUT / "bench/http_bench.py"), "--trivial-server",
                                       str(tport), "--workers", str(args.workers), "--threads", str(args.threads)],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
        trivial = f"http://127.0.0.1:{tport}"
        servers: dict[tuple[str, str], str] = {}  # (version, mode) -> url
        groups: dict[tuple[str, str], int] = {}  # (version, mode) -> the server's process group
        versions = {"this": args.service, **({"compare": args.compare} if args.compare else {})}
        for version, service in versions.items():
            venv = {**env, "PYTHONPATH": os.pathsep.join([service, env.get("PYTHONPATH", "")])}
            for mode in args.modes.split(","):
                port = free_port()
                flush = ["--fsync", "never"] if mode == "never" else ["--fsync", "always"] + (
                    ["--flush", mode] if mode != "default" else [])
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "spoolq.cli", "serve", "--root", str(tmp / version / mode), "--port",
                     str(port), "--workers", str(args.workers), "--threads", str(args.threads), *flush,
                     "--node-id", f"wrk-{version}-{mode}"], env=venv, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True))
                servers[(version, mode)] = f"http://127.0.0.1:{port}"
                groups[(version, mode)] = procs[-1].pid
        wait_up(trivial + "/hello", procs[0])
        for i, url in enumerate(servers.values()):
            wait_up(url + "/healthz", procs[i + 1])
            requests.put(f"{url}/mq/q", timeout=10)
            requests.post(url + "/", timeout=10, data=json.dumps({"QueueName": "q"}),
                          headers={"X-Amz-Target": "AmazonSQS.CreateQueue",
                                   "Content-Type": "application/x-amz-json-1.0"}).raise_for_status()
        triv_script = lua("POST", "{}", {"Content-Type": "application/json"})
        rows.append("| door | version | mode | conns | req/s | p50 ms | p99 ms | trivial req/s | ratio | "
                    "server CPU µs/req | trivial's | CPU ratio | sends per flush | sends per disk flush | load |")
        rows.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for _run in range(args.runs):
            for conns in (int(c) for c in args.conns.split(",")):
                for mode in args.modes.split(","):
                    for door in args.doors.split(","):
                        t_rps, _, _, _, t_cpu, _ = wrk(trivial + "/hello", triv_script, conns, args.seconds, tmp,
                                                    procs[0].pid)
                        for version in versions:
                            target, script = _door_request(door, servers[(version, mode)])
                            flushed = process_flushes(servers[(version, mode)])
                            disk = disk_flushes(tmp)
                            rps, p50, p99, bad, cpu, done = wrk(target, script, conns, args.seconds, tmp,
                                                                groups[(version, mode)])
                            time.sleep(1.2)  # each worker publishes its counts once a second
                            flushed = process_flushes(servers[(version, mode)]) - flushed
                            disk = disk_flushes(tmp) - disk
                            note = f" ({bad} non-2xx)" if bad else ""
                            rows.append(f"| {door} | {version} | {mode} | {conns} | {rps:,.0f}{note} | {p50:.1f} | "
                                        f"{p99:.1f} | {t_rps:,.0f} | {rps / t_rps:.2f} | {cpu:,.0f} | {t_cpu:,.0f} | "
                                        f"{t_cpu / cpu:.2f} | {per(done, flushed)} | {per(done, disk)} | {load()} |")
                            ratios.setdefault((door, version, mode, conns), []).append(rps / t_rps)
                            print(rows[-1], file=sys.stderr, flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n## http_wrk_bench: wrk -t2, {args.seconds:.0f} s per cell, gunicorn {args.workers} workers x "
          f"{args.threads} threads, 1 KiB bodies; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("\n".join(rows))
    if args.runs > 1:
        print("\n| door | version | mode | conns | median ratio to trivial | runs |\n|---|---|---|---|---|---|")
        for (door, version, mode, conns), rs in ratios.items():
            print(f"| {door} | {version} | {mode} | {conns} | {statistics.median(rs):.2f} | "
                  f"{' / '.join(f'{r:.2f}' for r in rs)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
