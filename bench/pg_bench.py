#!/usr/bin/env python
"""The store against PostgreSQL 15 as a durable queue, side by side in one run (never from pytest).

    python bench/pg_bench.py                 # 8 and 64 processes, 4 s cells, 2 runs
    python bench/pg_bench.py --quick         # 8 processes, 2 s cells, 1 run

Needs PostgreSQL 15 from Debian (``scripts/system-deps postgres``) and psycopg (dev extra). The
script starts a throwaway cluster (initdb + pg_ctl from /usr/lib/postgresql/15/bin) in a temp dir
on the same disk as the store's data dir, on a free port and a private socket dir, as the
``postgres`` user when run as root, and stops and removes it at the end.

Cells, each a set of client *processes* (fork) working for ``--seconds``, 1 KiB bodies, Python
clients on both sides:

* ``enqueue``: durable single sends. store: ``FileStore.send`` with each ``--flush``
  (``journal``, ``syncfs``, the default, and ``fsync``); PostgreSQL: ``INSERT`` with
  ``synchronous_commit=on``, autocommit.
* ``batch``: durable sends of ``BATCH`` messages at a time, 8 processes. store:
  ``FileStore.send_batch`` (its files written, then one flush for all of them); PostgreSQL: one
  ``INSERT ... VALUES (...), (...), ...`` of ``BATCH`` rows per commit. What SendMessageBatch,
  EmoDB ``sendBatch`` and Disque's pipelined ADDJOBs give a client that can batch.
* ``flush kinds`` (what decided the flush design): a file create + rename + ``syncfs`` per send,
  against an append of a 1 KiB record to the process's own journal + ``fdatasync``, and against
  the file + rename with a node-wide group commit (one ``syncfs`` at a time for all the
  processes, each send waiting for one that started after its rename: :func:`_node_syncfs`).
* ``floor``: what every message costs the file-per-message design before any store logic: a
  temp file written and renamed into a directory, plus a 1 KiB append to the process's own
  journal and its ``fdatasync`` (``--flush journal`` minus everything the store does around it).
* ``poll+ack``: 8 consumers, batch 10, on a pre-filled queue. store: ``poll(limit=10)`` +
  ``ack``; PostgreSQL: ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 10)
  RETURNING`` (the claim, with a visibility deadline) + ``DELETE ... WHERE id = ANY(...)``.
  The poll+ack ``floor``: each message renamed from its ready bucket into a claimed directory,
  read, renamed into the trash and unlinked, consumers walking the buckets in their own orders
  (an ack's rename and unlink, with no listing cursor, no names to parse, no store logic).

Each cell also counts the write requests its disk completed (``/proc/diskstats``) per message
handled: on a disk that is short of IOPS this, not CPU, sets the rate, and it moves far less
with the machine's load than the rates do. Every cell starts after an ``os.sync()``, so none pays for the writeback of the one before.
Ratios (store / PostgreSQL) are what to read: the cells of one run follow each other closely, so
a noisy neighbour hits both alike. Load (``uptime``) is printed with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import multiprocessing as mp
import os
import pwd
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spoolq.store import FileStore, OutgoingMessage
from spoolq.store.files import TempWriter, rename_into

PG_BIN = Path("/usr/lib/postgresql/15/bin")
CHECKOUT = Path(__file__).resolve().parent.parent
BODY = os.urandom(1024)
BATCH = 10


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================== throwaway PostgreSQL


class Postgres:
    def __init__(self, parent: Path) -> None:
        if not (PG_BIN / "initdb").exists():
            subprocess.run([str(CHECKOUT / "scripts/system-deps"), "postgres"], check=True)
        self.user: str | None = None
        base = parent
        if os.geteuid() == 0:  # postgres refuses to run as root
            self.user = "postgres"
            pw = pwd.getpwnam("postgres")
            base = Path("/var/tmp")  # a dir the postgres user can reach (same disk here; printed)
        self.dir = Path(tempfile.mkdtemp(prefix="spoolq-pgbench-", dir=base))
        if self.user:
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.data, self.sock = self.dir / "data", self.dir / "sock"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._run([str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "bench", "--no-sync"])
        self._run(["mkdir", str(self.sock)])
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses='' -c max_connections=300 "
                "-c synchronous_commit=on -c fsync=on -c shared_buffers=128MB")
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"),
                   "-w", "start"])
        self.conninfo = f"host={self.sock} port={self.port} user=bench dbname=postgres"

    def _run(self, cmd: list[str]) -> None:
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def reset(self) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS q")
            c.execute("CREATE TABLE q (id bigserial PRIMARY KEY, body bytea NOT NULL, "
                      "visible_at timestamptz NOT NULL DEFAULT '-infinity')")

    def fill(self, n: int) -> None:
        import psycopg

        with psycopg.connect(self.conninfo) as c, c.cursor() as cur:
            with cur.copy("COPY q (body) FROM STDIN") as cp:
                for _ in range(n):
                    cp.write_row((BODY,))
            c.commit()
        with psycopg.connect(self.conninfo, autocommit=True) as c:
            c.execute("VACUUM ANALYZE q")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(self.dir, ignore_errors=True)


# ============================================================== workers


def _own_journal(root: Path) -> int:
    """This process's append-only journal file under ``root``."""
    return os.open(root / f"journal-{os.getpid()}", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _message_file_op(root: Path, flush: Callable[[], None]) -> Callable[[], int]:
    """One message the way the design stores it, with no store logic: a temp file of ``BODY``
    renamed into ``root/ready``; then ``flush``."""
    tmp = TempWriter(root / "tmp", "bench")
    numbers = itertools.count(1)

    def op() -> int:
        rename_into(tmp.write(BODY), f"{root}/ready", f"{os.getpid()}-{next(numbers)}", base=str(root))
        flush()
        return 1
    return op


def _node_syncfs(root: Path, syncfs: Callable[[], None]) -> Callable[[], None]:
    """A flush shared by every process of the node: ``root/flush-seq`` holds two counters (flushes
    started, flushes completed) guarded by an ``flock`` of ``root/flush-state``; the process that
    flushes holds an ``flock`` of ``root/flush-leader`` while its ``syncfs`` runs, so the others
    queue behind it and the next leader's ``syncfs`` covers all of them."""
    import fcntl
    import mmap
    import struct

    seq = root / "flush-seq"
    with contextlib.suppress(FileExistsError), open(seq, "xb") as f:
        f.write(bytes(16))
    counters = mmap.mmap(os.open(seq, os.O_RDWR), 16)
    state = os.open(root / "flush-state", os.O_RDWR | os.O_CREAT, 0o644)
    leader = os.open(root / "flush-leader", os.O_RDWR | os.O_CREAT, 0o644)

    @contextlib.contextmanager
    def held(fd: int) -> Iterator[None]:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def flush() -> None:
        with held(state):
            target = struct.unpack_from("q", counters)[0] + 1  # the first flush to start after this send's rename
        with held(leader):
            with held(state):
                started, completed = struct.unpack_from("qq", counters)
                if completed >= target:  # a leader flushed for this send while it queued
                    return
                struct.pack_into("q", counters, 0, started + 1)
            syncfs()
            with held(state):
                struct.pack_into("q", counters, 8, started + 1)
    return flush


def _op(kind: str, p: dict[str, Any]) -> Callable[[], int]:
    if kind.startswith("store-flush-"):
        store = FileStore(p["root"], flush=kind.rsplit("-", 1)[1])
        msg = OutgoingMessage(body=BODY)
        return lambda: (store.send("q", msg), 1)[1]
    if kind == "pg-insert":
        import psycopg

        conn = psycopg.connect(p["pg"], autocommit=True)
        return lambda: (conn.execute("INSERT INTO q (body) VALUES (%s)", (BODY,)), 1)[1]
    if kind == "store-batch":
        store = FileStore(p["root"])
        batch = [OutgoingMessage(body=BODY)] * BATCH
        return lambda: len(store.send_batch("q", batch))
    if kind == "pg-insert-batch":  # BATCH rows, one statement, one commit
        import psycopg

        conn = psycopg.connect(p["pg"], autocommit=True)
        rows_sql = "INSERT INTO q (body) VALUES " + ", ".join(["(%s)"] * BATCH)
        return lambda: (conn.execute(rows_sql, (BODY,) * BATCH), BATCH)[1]
    if kind == "flush-journal-own":  # one journal per process, each fdatasync'd by its own process
        jfd = _own_journal(Path(p["root"]))
        return lambda: (os.write(jfd, BODY), os.fdatasync(jfd), 1)[2]
    if kind == "floor-files-journal":  # the design's floor: a message file + rename + journal fdatasync
        d = Path(p["root"])
        jfd = _own_journal(d)

        def append_and_sync() -> None:
            os.write(jfd, BODY)
            os.fdatasync(jfd)
        return _message_file_op(d, append_and_sync)
    if kind in ("flush-syncfs", "flush-node-syncfs"):  # write a file, rename it, syncfs (own, or node-wide)
        from spoolq.store.files import _SYNCFS

        d = Path(p["root"])
        rfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)

        def syncfs() -> None:
            if _SYNCFS(rfd) != 0:
                raise OSError("syncfs failed")
        return _message_file_op(d, syncfs if kind == "flush-syncfs" else _node_syncfs(d, syncfs))
    if kind == "store-consume":
        store = FileStore(p["root"], peers=p["procs"])

        def consume() -> int:
            got = store.poll("q", limit=BATCH, claim_ttl=300)
            return sum(store.ack("q", [d.receipt for d in got])) if got else 0
        return consume
    if kind == "floor-consume":  # the design's floor: rename to claimed, read, rename to trash, unlink
        import random

        q = Path(p["root"]) / "queues" / "q"
        rng = random.Random(os.getpid())
        buckets = [str(b) for k in sorted((q / "ready").iterdir()) for b in sorted(k.iterdir())]
        rng.shuffle(buckets)  # no cursor: each consumer walks the buckets in its own order
        claimed, trash = q / "claimed" / "floor", Path(p["root"]) / "trash"
        claimed.mkdir(parents=True, exist_ok=True)
        pending: list[str] = []

        def floor_consume() -> int:
            done = 0
            while done < BATCH:
                if not pending:
                    if not buckets:
                        break
                    b = buckets.pop()
                    names = os.listdir(b)
                    rng.shuffle(names)
                    pending.extend(f"{b}/{n}" for n in names)
                    continue
                src = pending.pop()
                dst = f"{claimed}/{os.path.basename(src)}"
                try:
                    os.rename(src, dst)
                except FileNotFoundError:
                    continue  # another consumer took it
                with open(dst, "rb") as f:
                    f.read()
                gone = f"{trash}/{os.getpid()}-{os.path.basename(src)}"
                os.rename(dst, gone)
                os.unlink(gone)
                done += 1
            return done
        return floor_consume
    if kind == "pg-consume":
        import psycopg

        conn = psycopg.connect(p["pg"], autocommit=True)

        def pg_consume() -> int:
            rows = conn.execute(
                "UPDATE q SET visible_at = now() + interval '300 s' WHERE id IN ("
                " SELECT id FROM q WHERE visible_at <= now() ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)"
                " RETURNING id, body", (BATCH,)).fetchall()
            if not rows:
                return 0
            conn.execute("DELETE FROM q WHERE id = ANY(%s)", ([r[0] for r in rows],))
            return len(rows)
        return pg_consume
    raise ValueError(kind)


def _worker(kind: str, p: dict[str, Any], seconds: float, barrier: Any, out: Any) -> None:
    try:
        op = _op(kind, p)
        barrier.wait(120)
        t0 = time.monotonic()
        n = 0
        last = t0  # when the last call that handled a message returned: a drained queue stops the clock
        while time.monotonic() - t0 < seconds:
            got = op()
            if got:
                n += got
                last = time.monotonic()
        out.put((n, t0, last, None))
    except BaseException as e:
        with contextlib.suppress(Exception):
            barrier.abort()
        out.put((0, 0.0, 0.0, f"{type(e).__name__}: {e}"))


def cell(kind: str, p: dict[str, Any], procs: int, seconds: float) -> float:
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(kind, p, seconds, barrier, out), daemon=True) for _ in range(procs)]
    for pr in ps:
        pr.start()
    results = [out.get(timeout=300) for _ in ps]
    for pr in ps:
        pr.join(30)
    errors = [r[3] for r in results if r[3]]
    if errors:
        raise RuntimeError(f"{kind}: {errors[0]}")
    # from the first start to the last message handled: a consumer cell that drains its pre-filled
    # queue before the time is up is not rated as if it had kept working (fill / seconds)
    span = max(r[2] for r in results) - min(r[1] for r in results)
    return sum(r[0] for r in results) / span if span > 0 else 0.0


def disk_writes(path: Path) -> int | None:
    """Write requests completed so far by the block device holding ``path`` (/proc/diskstats),
    or None where that cannot be told (another OS, a device-mapper or network file system)."""
    dev = os.stat(path).st_dev
    try:
        with open("/proc/diskstats") as f:
            for line in f:
                fields = line.split()
                if (int(fields[0]), int(fields[1])) == (os.major(dev), os.minor(dev)):
                    return int(fields[7])
    except (OSError, ValueError, IndexError):
        pass
    return None


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--procs", default="8,64", help="client process counts for enqueue")
    ap.add_argument("--consumers", type=int, default=8)
    ap.add_argument("--fill", type=int, default=30_000, help="messages pre-filled for poll+ack")
    ap.add_argument("--dir", default=None, help="parent of the store's data dir (default: beside the checkout)")
    ap.add_argument("--cells", default="enqueue,batch,consume",
                    help="which groups to run: enqueue (with the flush kinds and floors), batch, consume")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.runs, args.procs, args.fill = 2.0, 1, "8", 10_000
    parent = Path(args.dir or CHECKOUT.parent)
    work = Path(tempfile.mkdtemp(prefix="spoolq-pgbench-store-", dir=parent))
    pg = Postgres(parent)
    rows: dict[str, list[float]] = {}
    loads: list[str] = []

    writes: dict[str, list[float]] = {}

    def measure(name: str, kind: str, procs: int, fresh: Callable[[], dict[str, Any]]) -> None:
        p = fresh()
        w0, t0 = disk_writes(work), time.monotonic()
        rate = cell(kind, p, procs, args.seconds)
        w1, span = disk_writes(work), time.monotonic() - t0
        rows.setdefault(name, []).append(rate)
        per_msg = ""
        if w0 is not None and w1 is not None and rate > 0:
            # over the whole cell (start-up included): disk write requests per message handled
            writes.setdefault(name, []).append((w1 - w0) / (rate * args.seconds))
            per_msg = f", {(w1 - w0) / span:,.0f} disk writes/s"
        log(f"{name}: {rate:,.0f}/s{per_msg} ({load()})")

    cells = iter(range(1_000_000))

    def store_root(fill: int = 0) -> dict[str, Any]:
        # a fresh root per cell, all removed at the end: no cell's figure includes deleting the
        # tens of thousands of files the cell before it wrote (the disk is mounted with discard)
        root = work / f"root-{next(cells)}"
        s = FileStore(root, fsync=False)
        s.create_queue("q")
        for i in range(0, fill, 1000):
            s.send_batch("q", [OutgoingMessage(body=BODY)] * min(1000, fill - i))
        s.close()
        (root / "ready").mkdir(exist_ok=True)
        os.sync()  # no cell pays for the writeback of the one before
        return {"root": str(root), "procs": args.consumers}

    def pg_fresh(fill: int = 0) -> dict[str, Any]:
        pg.reset()
        if fill:
            pg.fill(fill)
        os.sync()
        return {"pg": pg.conninfo}

    try:
        for run in range(args.runs):
            loads.append(load())
            for n in (int(x) for x in args.procs.split(",")) if "enqueue" in args.cells else ():
                measure(f"enqueue {n} procs: store (--flush journal)", "store-flush-journal", n, store_root)
                measure(f"enqueue {n} procs: PostgreSQL INSERT", "pg-insert", n, pg_fresh)
                measure(f"enqueue {n} procs: store (--flush syncfs)", "store-flush-syncfs", n, store_root)
                measure(f"enqueue {n} procs: store (--flush fsync)", "store-flush-fsync", n, store_root)
                if n <= 8:
                    measure(f"flush kinds {n} procs: file + rename + syncfs", "flush-syncfs", n, store_root)
                    measure(f"flush kinds {n} procs: journal append + fdatasync", "flush-journal-own", n,
                            store_root)
                    measure(f"flush kinds {n} procs: file + rename + node-wide syncfs", "flush-node-syncfs", n,
                            store_root)
                measure(f"floor {n} procs: file + rename + journal fdatasync, no store", "floor-files-journal", n,
                        store_root)
            if "batch" in args.cells:
                measure(f"batch of {BATCH}, 8 procs: store send_batch", "store-batch", 8, store_root)
                measure(f"batch of {BATCH}, 8 procs: PostgreSQL INSERT of {BATCH} rows", "pg-insert-batch", 8,
                        pg_fresh)
            c = args.consumers
            if "consume" not in args.cells:
                log(f"run {run + 1}/{args.runs} done")
                continue
            measure(f"poll+ack batch {BATCH}, {c} consumers: store", "store-consume", c,
                    lambda: store_root(args.fill))
            measure(f"poll+ack batch {BATCH}, {c} consumers: PostgreSQL SKIP LOCKED", "pg-consume", c,
                    lambda: pg_fresh(args.fill))
            measure(f"floor {c} consumers: rename, read, rename, unlink, no store", "floor-consume", c,
                    lambda: store_root(args.fill))
            log(f"run {run + 1}/{args.runs} done")
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"\n## pg_bench: {args.runs} run(s) x {args.seconds:.0f} s cells, median msgs/s; "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("load at the start of each run: " + "; ".join(loads))
    print("\n| cell | msgs/s | runs | disk writes per message |\n|---|---|---|---|")
    for k, v in med.items():
        per_msg = f"{statistics.median(writes[k]):.2f}" if k in writes else "?"
        print(f"| {k} | {v:,.0f} | {' / '.join(f'{x:,.0f}' for x in rows[k])} | {per_msg} |")
    print("\n| ratio | value |\n|---|---|")
    for n in (int(x) for x in args.procs.split(",")) if "enqueue" in args.cells else ():
        pgr = med[f"enqueue {n} procs: PostgreSQL INSERT"]
        for mode in ("journal", "syncfs", "fsync"):
            print(f"| enqueue {n}: store --flush {mode} / PostgreSQL | "
                  f"{med[f'enqueue {n} procs: store (--flush {mode})'] / pgr:.2f} |")
        if n <= 8:
            print(f"| floor {n}: file + rename + syncfs, no store / PostgreSQL | "
                  f"{med[f'flush kinds {n} procs: file + rename + syncfs'] / pgr:.2f} |")
        print(f"| floor {n}: file + rename + journal fdatasync, no store / PostgreSQL | "
              f"{med[f'floor {n} procs: file + rename + journal fdatasync, no store'] / pgr:.2f} |")
        if n <= 8:
            print(f"| flush {n}: journal fdatasync / file+syncfs | "
                  f"{med[f'flush kinds {n} procs: journal append + fdatasync'] / med[f'flush kinds {n} procs: file + rename + syncfs']:.2f} |")
            print(f"| flush {n}: node-wide syncfs / own syncfs | "
                  f"{med[f'flush kinds {n} procs: file + rename + node-wide syncfs'] / med[f'flush kinds {n} procs: file + rename + syncfs']:.2f} |")
    if "batch" in args.cells:
        store_batch = med[f"batch of {BATCH}, 8 procs: store send_batch"]
        pg_batch = med[f"batch of {BATCH}, 8 procs: PostgreSQL INSERT of {BATCH} rows"]
        print(f"| batch of {BATCH}: store send_batch / PostgreSQL INSERT of {BATCH} rows | {store_batch / pg_batch:.2f} |")
        pg_single = med.get("enqueue 8 procs: PostgreSQL INSERT")
        if pg_single:
            print(f"| batch of {BATCH}: store send_batch / PostgreSQL single-row INSERT | {store_batch / pg_single:.2f} |")
    if "consume" in args.cells:
        c = args.consumers
        pgc = med[f"poll+ack batch {BATCH}, {c} consumers: PostgreSQL SKIP LOCKED"]
        print(f"| floor poll+ack: rename, read, rename, unlink, no store / PostgreSQL | "
              f"{med[f'floor {c} consumers: rename, read, rename, unlink, no store'] / pgc:.2f} |")
        print(f"| poll+ack: store / PostgreSQL | {med[f'poll+ack batch {BATCH}, {c} consumers: store'] / pgc:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
