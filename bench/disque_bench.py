#!/usr/bin/env python3
"""Disque door benchmark: pipelined ADDJOB and GETJOB+ACKJOB against the HTTP door and Redis.

Side by side in one run, at 1 and 8 concurrent connections, 16 jobs per round trip, ~100-byte
bodies, for ``--seconds`` each:

* ``disque``  spoolq's Disque door: a pipeline of 16 ``ADDJOB``; ``GETJOB COUNT 16`` then one
  ``ACKJOB`` of what came back
* ``http``    the EmoDB door on the same store: ``sendbatch`` of 16; ``poll?limit=16`` then ``ack``
* ``redis``   Redis 7 with ``appendonly yes`` / ``appendfsync always`` (Debian's redis-server,
  started here on a free port in a temp dir): a pipeline of 16 ``LPUSH``; a pipeline of 16
  ``BLMOVE q processing RIGHT LEFT`` then 16 ``LREM processing`` (the reliable-queue pattern)

Every spoolq send is durable before its reply (group commit), as every Redis write is with
appendfsync always. Prints jobs/s per case and the ratios, and the CPU time the Disque
process spent per job (user + system, from ``/proc``; it moves far less with the machine's load
than a rate does). Not a test.

    python bench/disque_bench.py [--seconds 5] [--root DIR]
    python bench/disque_bench.py --compare OTHER/service --rounds 3 --fsync never   # before/after in one run
    python bench/disque_bench.py --reader   # the request reader alone, in this process

``--compare`` serves another checkout's ``service/`` next to this one's and runs only the Disque
cells, alternating the two servers cell by cell for ``--rounds`` rounds; it prints each server's
median jobs/s and the Disque process's CPU µs per command, and their ratio. A durable send's CPU
includes its flush (``syncfs`` walks every dirty page of the file system, other programs' too), so
on a shared machine ``--fsync never`` is what shows the door's own cost; the get+ack cells' mix
(empty GETJOBs among them) depends on how many jobs the add cell left, so the add cells are the
ones to compare.

``--reader`` times the request reader alone (:mod:`spoolq.disque.reader`), CPU time of this
thread per chunk received, best of 5 rounds: hiredis by itself (what the door did before it
checked declared lengths), the reader (hiredis behind its checks), and the walker that reads
what hiredis may not, on the chunks the cells above send.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis
import requests

CHECKOUT = Path(__file__).resolve().parents[1]
BODY = "x" * 100
BATCH = 16
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {port}")


def disque_pid(parent: int, timeout: float = 30) -> int:
    """The Disque listener among the children of ``spoolq serve`` (process ``parent``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError):
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == parent and b"spoolq.disque.server" in Path(f"/proc/{entry}/cmdline").read_bytes():
                    return int(entry)
        time.sleep(0.1)
    raise RuntimeError("no Disque process under spoolq serve")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@contextlib.contextmanager
def spoolq(root: Path, service: Path | None = None, fsync: str | None = None) -> Iterator[tuple[int, int, int]]:
    """``spoolq serve`` with the Disque door on ``root``: (HTTP port, Disque port, Disque pid); the
    code of ``service`` (another checkout's ``service/`` dir) when given."""
    http, dq = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    if service is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(service), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(root), "--port", str(http),
                             "--disque-port", str(dq), "--workers", "2", "--node-id", "bench",
                             *(["--fsync", fsync] if fsync else [])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_port(dq)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"http://127.0.0.1:{http}/healthz", timeout=1).ok:
                    break
            time.sleep(0.1)
        yield http, dq, disque_pid(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)


@contextlib.contextmanager
def redis_server(tmp: Path) -> Iterator[int | None]:
    if shutil.which("redis-server") is None and subprocess.run([str(CHECKOUT / "scripts/system-deps"), "redis"]).returncode:
        print("redis-server missing and scripts/system-deps redis could not install it: skipping Redis")
        yield None
        return
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp),
                             "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                             "--protected-mode", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(30)


def run(conc: int, seconds: float, setup: Callable[[], object], step: Callable[[object], int]) -> float:
    """Jobs/s of ``conc`` threads each looping ``step(state)`` (returns jobs done) for ``seconds``."""
    counts = [0] * conc
    start = threading.Barrier(conc + 1)
    stop = threading.Event()

    def worker(i: int) -> None:
        state = setup()
        start.wait()
        while not stop.is_set():
            counts[i] += step(state)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(conc)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - t0)


def run_cpu(pid: int, conc: int, seconds: float, setup: Callable[[], object],
            step: Callable[[object], int]) -> tuple[float, float]:
    """(jobs/s, CPU µs of process ``pid`` per job) of one :func:`run` cell."""
    before, t0 = cpu_seconds(pid), time.monotonic()
    rate = run(conc, seconds, setup, step)
    jobs = rate * (time.monotonic() - t0)
    return rate, (cpu_seconds(pid) - before) / max(jobs, 1) * 1e6


def redis_client(port: int) -> Callable[[], object]:
    return lambda: redis.Redis(port=port, protocol=2)


def dq_add(c: object) -> int:
    pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
    for _ in range(BATCH):
        pipe.execute_command("ADDJOB", "bench", BODY, 0)
    return len(pipe.execute())


def dq_get(c: object) -> int:
    rows = c.execute_command("GETJOB", "NOHANG", "COUNT", BATCH, "FROM", "bench")  # type: ignore[attr-defined]
    if not rows:
        return 0
    c.execute_command("ACKJOB", *[row[1] for row in rows])  # type: ignore[attr-defined]
    return len(rows)


class Counted:
    """A client that counts the commands it sends (every thread's, under one lock)."""

    commands = 0
    lock = threading.Lock()

    def __init__(self, port: int) -> None:
        self.redis = redis.Redis(port=port, protocol=2)

    @classmethod
    def add(cls, n: int) -> None:
        with cls.lock:
            cls.commands += n


def counted_add(c: object) -> int:
    assert isinstance(c, Counted)
    Counted.add(BATCH)
    return dq_add(c.redis)


def counted_get(c: object) -> int:
    assert isinstance(c, Counted)
    rows = c.redis.execute_command("GETJOB", "NOHANG", "COUNT", BATCH, "FROM", "bench")
    Counted.add(1 if not rows else 2)
    if not rows:
        return 0
    c.redis.execute_command("ACKJOB", *[row[1] for row in rows])
    return len(rows)


def compare(tmp: Path, seconds: float, other: Path, rounds: int, fsync: str | None = None) -> None:
    """The Disque cells of this checkout's server and ``other``'s, alternating, ``rounds`` times:
    jobs/s and the Disque process's CPU time per command (``add``: 16 pipelined ADDJOBs per round
    trip; ``get+ack``: a GETJOB COUNT 16 and an ACKJOB of what it got, or the GETJOB alone when the
    queue is empty)."""
    servers = {"this": CHECKOUT / "service", "compare": other}
    cells: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        pids, ports = {}, {}
        for name, service in servers.items():
            _http, ports[name], pids[name] = stack.enter_context(spoolq(tmp / f"root-{name}", service, fsync))
        for r in range(rounds):
            for conc in (1, 8):
                for op, step in (("add", counted_add), ("get+ack", counted_get)):
                    for name in (list(servers) if r % 2 == 0 else list(reversed(list(servers)))):
                        Counted.commands = 0
                        before = cpu_seconds(pids[name])
                        rate = run(conc, seconds, lambda port=ports[name]: Counted(port), step)
                        per_command = (cpu_seconds(pids[name]) - before) / max(Counted.commands, 1) * 1e6
                        cells.setdefault((name, op, conc), []).append((rate, per_command))
                        print(f"round {r + 1} {name:7s} conc={conc} {op:7s} {rate:9.0f} jobs/s "
                              f"{per_command:7.1f} µs CPU/command", flush=True)
    print(f"\nload: {os.getloadavg()[0]:.1f} (1-min average), {os.cpu_count()} CPUs; medians of {rounds} rounds")
    print(f"| op | conns | jobs/s this | jobs/s {other} | CPU µs/command this | other | this/other |")
    print("|---|---|---|---|---|---|---|")
    for op in ("add", "get+ack"):
        for conc in (1, 8):
            this, that = cells[("this", op, conc)], cells[("compare", op, conc)]
            rt, ro = statistics.median(c[0] for c in this), statistics.median(c[0] for c in that)
            ct, co = statistics.median(c[1] for c in this), statistics.median(c[1] for c in that)
            print(f"| {op} | {conc} | {rt:.0f} | {ro:.0f} | {ct:.1f} | {co:.1f} | {ct / co:.3f} |")


def resp(*args: bytes | str | int) -> bytes:
    out = b"*%d\r\n" % len(args)
    for a in args:
        data = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(data), data)
    return out


def reader_cells(rounds: int = 5, chunks: int = 20_000) -> None:
    """CPU µs per chunk of hiredis alone, the reader, and the walker (see ``--reader``)."""
    import hiredis

    from spoolq.disque.reader import Limits, Parsed, RequestReader, Walker

    limits = Limits.after_auth(1_048_576 + 65_536)
    cases = {"16 ADDJOB": b"".join(resp("ADDJOB", "bench", BODY, 0) for _ in range(BATCH)),
             "GETJOB COUNT 16": resp("GETJOB", "NOHANG", "COUNT", BATCH, "FROM", "bench"),
             "ACKJOB of 16": resp("ACKJOB", *[f"D-{i:040x}" for i in range(BATCH)]),
             "PING": resp("PING")}

    reader = hiredis.Reader()
    walker = Walker(limits)

    def plain(data: bytes) -> object:
        reader.feed(data)
        out = []
        while (req := reader.gets()) is not False:
            if not isinstance(req, list) or not all(isinstance(a, bytes) for a in req):
                raise ValueError(req)
            out.append(req)
        return out

    def walked(data: bytes) -> object:
        out: list[Parsed] = []
        walker.walk(data, out)
        return out

    print("| chunk | hiredis alone µs | reader µs | walker µs |\n|---|---|---|---|")
    for name, data in cases.items():
        best = []
        for fn in (plain, RequestReader(limits).feed, walked):
            times = []
            for _ in range(rounds):
                started = time.thread_time()
                for _ in range(chunks):
                    fn(data)
                times.append((time.thread_time() - started) / chunks * 1e6)
            best.append(min(times))
        print(f"| {name} | {best[0]:.2f} | {best[1]:.2f} | {best[2]:.2f} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--root", type=Path, help="directory for the store and Redis (default: a temp dir in the checkout)")
    p.add_argument("--compare", type=Path, help="another checkout's service/ dir: its Disque door beside this one's")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds with --compare")
    p.add_argument("--reader", action="store_true", help="time the request reader alone")
    p.add_argument("--fsync", choices=["always", "never"], help="spoolq serve --fsync (with --compare, "
                   "'never' keeps each flush's CPU, which other programs' dirty pages inflate, out of the figures)")
    a = p.parse_args()
    if a.reader:
        reader_cells()
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="disque-bench-", dir=a.root or CHECKOUT))
    results: dict[tuple[str, str, int], float] = {}
    cpu: dict[tuple[str, int], float] = {}
    try:
        if a.compare is not None:
            compare(tmp, a.seconds, a.compare.resolve(), a.rounds, a.fsync)
            return 0
        with spoolq(tmp / "root") as (http, dq, dq_pid), redis_server(tmp) as rport:
            url = f"http://127.0.0.1:{http}/queue/1/bench-http"

            def http_add(s: object) -> int:
                r = s.post(url + "/sendbatch", json=[BODY] * BATCH, timeout=30)  # type: ignore[attr-defined]
                r.raise_for_status()
                return BATCH

            def http_get(s: object) -> int:
                msgs = s.get(url + "/poll", params={"limit": BATCH, "ttl": 30}, timeout=30).json()  # type: ignore[attr-defined]
                if not msgs:
                    return 0
                s.post(url + "/ack", json=[m["id"] for m in msgs], timeout=30).raise_for_status()  # type: ignore[attr-defined]
                return len(msgs)

            def redis_add(c: object) -> int:
                pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                for _ in range(BATCH):
                    pipe.lpush("bench", BODY)
                return len(pipe.execute())

            def redis_get(c: object) -> int:
                pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                for _ in range(BATCH):
                    pipe.execute_command("BLMOVE", "bench", "processing", "RIGHT", "LEFT", "0.01")
                got = [v for v in pipe.execute() if v is not None]
                if got:
                    pipe = c.pipeline(transaction=False)  # type: ignore[attr-defined]
                    for v in got:
                        pipe.lrem("processing", 1, v)
                    pipe.execute()
                return len(got)

            cases: list[tuple[str, Callable[[], object], Callable[[object], int], Callable[[object], int]]] = [
                ("disque", redis_client(dq), dq_add, dq_get), ("http", requests.Session, http_add, http_get)]
            if rport is not None:
                cases.append(("redis", redis_client(rport), redis_add, redis_get))
            for conc in (1, 8):
                for name, setup, add, get in cases:
                    if name == "disque":
                        results[(name, "add", conc)], cpu[("add", conc)] = run_cpu(dq_pid, conc, a.seconds, setup, add)
                        results[(name, "get+ack", conc)], cpu[("get+ack", conc)] = run_cpu(
                            dq_pid, conc, a.seconds, setup, get)
                    else:
                        results[(name, "add", conc)] = run(conc, a.seconds, setup, add)
                        results[(name, "get+ack", conc)] = run(conc, a.seconds, setup, get)
                    print(f"{name:7s} conc={conc}  add {results[(name, 'add', conc)]:9.0f} jobs/s   "
                          f"get+ack {results[(name, 'get+ack', conc)]:9.0f} jobs/s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload: {os.getloadavg()[0]:.1f} (1-min average), {os.cpu_count()} CPUs")
    print("| op | conns | Disque door | Disque CPU µs/job | HTTP door | Redis 7 (fsync always) | Disque/HTTP | Disque/Redis |")
    print("|---|---|---|---|---|---|---|---|")
    for op in ("add", "get+ack"):
        for conc in (1, 8):
            d, h = results[("disque", op, conc)], results[("http", op, conc)]
            rr = results.get(("redis", op, conc))
            print(f"| {op} | {conc} | {d:.0f} | {cpu[(op, conc)]:.1f} | {h:.0f} | {f'{rr:.0f}' if rr else '-'} | "
                  f"{d / h:.2f} | {f'{d / rr:.2f}' if rr else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
