#!/usr/bin/env python
"""The store against PostgreSQL 15 as a durable queue, side by side in one run (never from pytest).

    python bench/pg_bench.py                 # 8 and 64 processes, 4 s cells, 2 runs
    python bench/pg_bench.py --quick         # 8 processes, 2 s cells, 1 run

Needs PostgreSQL 15 from Debian (``scripts/system-deps postgres``) and psycopg (dev extra). The
script starts a throwaway cluster (initdb + pg_ctl from /usr/lib/postgresql/15/bin) in a temp dir
on the same disk as the store's data dir, on a free port and a private socket dir, as the
``postgres`` user when run as root, and stops and removes it at the end.

    python bench/pg_bench.py --compare OLD/service   # also the store of another checkout (before/after)
    python bench/pg_bench.py --compare OLD/service --compare-flush journal --cells enqueue,batch

Cells, each a set of client *processes* (fork) working for ``--seconds``, 1 KiB bodies, Python
clients on both sides:

* ``enqueue``: durable single sends. store: ``FileStore.send`` with each ``--flush``
  (``syncfs``, ``journal`` and ``fsync``; which is the default depends on the file system,
  ``spoolq check-config`` names it); PostgreSQL: ``INSERT`` with
  ``synchronous_commit=on``, autocommit. Next to them the file-floor cells of
  ``file_floor.py`` (the same processes doing only the file-system work of a message, no store
  code): the way the store makes its files (``tmpfile``: made in place) and the way it made them
  before (``tmp``: through the shared ``tmp/``), each with the three flushes; and, with
  ``--compare DIR``, the store of another checkout in the same processes (its cell of
  ``--compare-flush``, ``syncfs`` unless told).
* ``batch``: durable sends of ``BATCH`` messages at a time, 8 processes. store:
  ``FileStore.send_batch``; PostgreSQL: one ``INSERT ... VALUES (...), (...), ...`` of ``BATCH``
  rows per commit; the floor of ``BATCH`` files per flush. And *coalesced*: 8 processes of
  ``--threads`` threads each calling ``FileStore.send`` one message at a time (the default flush of
  the data dir's file system, as ``send_batch`` and poll+ack), as a server's
  request threads do: concurrent sends of a process share one flush.
* ``poll+ack``: ``--consumers`` processes (8 unless told, e.g. ``--consumers 1,2,8``), batch 10, on
  a pre-filled queue. store: ``poll(limit=10)`` + ``ack`` with default settings (the consumers
  register in ``pollers.lock`` and split each bucket into one lane each), or with ``--told-peers``
  each told the others poll too (``peers``: consumers - 1); PostgreSQL: ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 10)
  RETURNING`` (the claim, with a visibility deadline) + ``DELETE ... WHERE id = ANY(...)``.
  The poll+ack ``floor``: each message renamed from its ready bucket into a claimed directory,
  read, renamed into the trash and unlinked, consumers walking the buckets in their own orders
  (an ack's rename and unlink, with no listing cursor, no names to parse, no store logic).

Each cell also counts the write requests its disk completed (``/proc/diskstats``) per message
handled: on a disk that is short of IOPS this, not CPU, sets the rate, and it moves far less
with the machine's load than the rates do. Every cell gets a fresh data directory and starts
after an ``os.sync()``, so none pays for the writeback of the one before. The cells of a run
follow each other closely and runs alternate, so a noisy neighbour hits all of them alike; the
ratios printed at the end are of the medians. Load (``uptime``) is printed with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import pwd
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import file_floor

from spoolq.store import FileStore, OutgoingMessage

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
            reachable = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(parent)],
                                       check=False).returncode == 0
            base = parent if reachable else Path("/var/tmp")  # printed: it may be another disk
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


def _op(kind: str, p: dict[str, Any]) -> Callable[[], int]:
    if kind.startswith("store-flush-"):  # store-flush-MODE, or store-flush-default: the file system's default
        mode = kind.rsplit("-", 1)[1]
        store = FileStore(p["root"], flush=None if mode == "default" else mode)
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
    if kind.startswith("file-"):  # file_floor.py's cell: the file-system work alone
        return file_floor.message_op(kind.removeprefix("file-"), Path(p["root"]))
    if kind == "store-consume":
        # default settings (lanes follow the live pollers), or told its peers (--told-peers)
        store = FileStore(p["root"], peers=p["procs"] - 1 if p.get("told_peers") else 0)

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
        counts: list[int] = []
        lasts: list[float] = []

        def loop() -> None:
            n = 0
            last = t0  # when the last call that handled a message returned: a drained queue stops the clock
            while time.monotonic() - t0 < seconds:
                got = op()
                if got:
                    n += got
                    last = time.monotonic()
            counts.append(n)
            lasts.append(last)

        threads = [threading.Thread(target=loop) for _ in range(p.get("threads", 1))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out.put((sum(counts), t0, max(lasts), None))
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


def _compare_cell(service: str, kind: str, p: dict[str, Any], procs: int, seconds: float) -> float:
    """The same cell run by a child process whose ``spoolq`` is the one under ``service``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([service, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, __file__, "--one-cell", json.dumps([kind, p, procs, seconds])],
                         env=env, check=True, stdout=subprocess.PIPE).stdout
    return float(out.decode().strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--procs", default="8", help="client process counts for enqueue (comma-separated)")
    ap.add_argument("--consumers", default="8", help="consumer process counts for poll+ack (comma-separated)")
    ap.add_argument("--threads", type=int, default=8, help="threads per process in the coalesced cell")
    ap.add_argument("--fill", type=int, default=60_000, help="messages pre-filled for poll+ack")
    ap.add_argument("--dir", default=None, help="parent of the store's data dir (default: beside the checkout)")
    ap.add_argument("--cells", default="enqueue,batch,consume",
                    help="which groups to run: enqueue (with the floor cells), batch, consume")
    ap.add_argument("--compare", default=None,
                    help="another checkout's service/ dir: its store's cells run next to this one's")
    ap.add_argument("--compare-flush", default="syncfs", choices=["syncfs", "journal", "fsync"],
                    help="the flush of the --compare store's single-send and coalesced cells")
    ap.add_argument("--delete-each", action="store_true",
                    help="delete each cell's data right after it (default: all at the end, so no cell pays for "
                         "another's delete)")
    ap.add_argument("--settle", type=float, default=1.0, help="with --delete-each: pause after each delete")
    ap.add_argument("--no-floors", dest="floors", action="store_false",
                    help="leave out the floor cells (the file-system work alone), for a shorter run")
    ap.add_argument("--told-peers", action="store_true",
                    help="poll+ack: each store consumer told its peers (consumers - 1, as --peers) instead of "
                         "default settings, where the lanes follow the live pollers")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--one-cell", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_cell:
        kind, p, procs, seconds = json.loads(args.one_cell)
        print(cell(kind, p, procs, seconds))
        return 0
    if args.quick:
        args.seconds, args.runs, args.procs, args.fill = 2.0, 1, "8", 10_000
    parent = Path(args.dir or CHECKOUT.parent)
    work = Path(tempfile.mkdtemp(prefix="spoolq-pgbench-store-", dir=parent))
    pg = Postgres(parent)
    log(f"store data under {work}, PostgreSQL data under {pg.data}")
    rows: dict[str, list[float]] = {}
    writes: dict[str, list[float]] = {}
    loads: list[str] = []

    def measure(name: str, kind: str, procs: int, fresh: Callable[[], dict[str, Any]],
                service: str | None = None) -> None:
        p = fresh()
        w0, t0 = disk_writes(work), time.monotonic()
        rate = _compare_cell(service, kind, p, procs, args.seconds) if service else cell(kind, p, procs, args.seconds)
        w1, span = disk_writes(work), time.monotonic() - t0
        rows.setdefault(name, []).append(rate)
        if args.delete_each and "root" in p:  # deleted now, and settled (a delete on a discard mount is slow)
            shutil.rmtree(p["root"], ignore_errors=True)
            os.sync()
            time.sleep(args.settle)
        per_msg = ""
        if w0 is not None and w1 is not None and rate > 0:
            # over the whole cell (start-up included): disk write requests per message handled
            writes.setdefault(name, []).append((w1 - w0) / (rate * args.seconds))
            per_msg = f", {(w1 - w0) / (rate * args.seconds):.2f} disk writes/msg"
        log(f"{name}: {rate:,.0f}/s{per_msg} ({load()}; {span:.1f} s)")

    cells = iter(range(1_000_000))

    def store_root(fill: int = 0, threads: int = 1, consumers: int = 8) -> dict[str, Any]:
        # a fresh root per cell, all removed at the end: no cell's figure includes deleting the
        # tens of thousands of files the cell before it wrote (the disk is mounted with discard)
        root = work / f"root-{next(cells)}"
        s = FileStore(root, fsync=False)
        s.create_queue("q")
        for i in range(0, fill, 1000):
            s.send_batch("q", [OutgoingMessage(body=BODY)] * min(1000, fill - i))
        s.close()
        os.sync()  # no cell pays for the writeback of the one before
        return {"root": str(root), "procs": consumers, "threads": threads, "told_peers": args.told_peers}

    def pg_fresh(fill: int = 0) -> dict[str, Any]:
        pg.reset()
        if fill:
            pg.fill(fill)
        os.sync()
        return {"pg": pg.conninfo}

    flushes = ("syncfs", "journal", "fsync")
    cf = args.compare_flush
    Cell = tuple[str, str, int, Callable[[], dict[str, Any]], "str | None"]

    def group_cells() -> list[list[Cell]]:
        """The cells of one run, in groups; within a group the order turns by one each run, so no
        cell always follows the same neighbour (a cell after another's writeback or delete pays
        for it on a busy disk)."""
        groups: list[list[Cell]] = []
        for n in (int(x) for x in args.procs.split(",")) if "enqueue" in args.cells else ():
            g: list[Cell] = [(f"enqueue {n}: PostgreSQL INSERT", "pg-insert", n, pg_fresh, None)]
            for f in flushes:
                g.append((f"enqueue {n}: store --flush {f}", f"store-flush-{f}", n, store_root, None))
                if args.floors:
                    g.append((f"enqueue {n}: floor tmpfile-{f} (made in place)", f"file-tmpfile-{f}", n, store_root,
                              None))
                    g.append((f"enqueue {n}: floor tmp-{f} (shared tmp/)", f"file-tmp-{f}", n, store_root, None))
            if args.compare:
                g.append((f"enqueue {n}: compared store --flush {cf}", f"store-flush-{cf}", n, store_root,
                          args.compare))
            groups.append(g)
        if "batch" in args.cells:
            threaded = lambda: store_root(threads=args.threads)  # noqa: E731
            g = [(f"batch of {BATCH}, 8: store send_batch", "store-batch", 8, store_root, None),
                 (f"batch of {BATCH}, 8: PostgreSQL INSERT of {BATCH} rows", "pg-insert-batch", 8, pg_fresh, None),
                 *([(f"batch of {BATCH}, 8: floor tmpfile-syncfs-b{BATCH}", f"file-tmpfile-syncfs-b{BATCH}", 8,
                     store_root, None)] if args.floors else []),
                 (f"coalesced, 8 x {args.threads} threads: store send", "store-flush-default", 8, threaded, None)]
            if args.compare:
                g.append((f"coalesced, 8 x {args.threads} threads: compared store send", f"store-flush-{cf}", 8,
                          threaded, args.compare))
                g.append((f"batch of {BATCH}, 8: compared store send_batch", "store-batch", 8, store_root,
                          args.compare))
            groups.append(g)
        for c in (int(x) for x in args.consumers.split(",")) if "consume" in args.cells else ():
            filled = lambda c=c: store_root(args.fill, consumers=c)  # noqa: E731
            g = [(f"poll+ack batch {BATCH}, {c}: store", "store-consume", c, filled, None),
                 (f"poll+ack batch {BATCH}, {c}: PostgreSQL SKIP LOCKED", "pg-consume", c,
                  lambda: pg_fresh(args.fill), None),
                 *([(f"poll+ack batch {BATCH}, {c}: floor rename, read, rename, unlink", "floor-consume", c, filled,
                     None)] if args.floors else [])]
            if args.compare:
                g.append((f"poll+ack batch {BATCH}, {c}: compared store", "store-consume", c, filled, args.compare))
            groups.append(g)
        return groups

    try:
        for run in range(args.runs):
            loads.append(load())
            for g in group_cells():
                turn = run % len(g)
                for name, kind, procs, fresh, service in g[turn:] + g[:turn]:
                    measure(name, kind, procs, fresh, service)
            log(f"run {run + 1}/{args.runs} done")
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"\n## pg_bench: {args.runs} run(s) x {args.seconds:g} s alternating cells, median msgs/s; "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("load at the start of each run: " + "; ".join(loads))
    print("\n| cell | msgs/s | runs | disk writes per message |\n|---|---|---|---|")
    for k, v in med.items():
        per_msg = f"{statistics.median(writes[k]):.2f}" if k in writes else "?"
        print(f"| {k} | {v:,.0f} | {' / '.join(f'{x:,.0f}' for x in rows[k])} | {per_msg} |")
    print("\n| ratio | value |\n|---|---|")

    def ratio(label: str, a: str, b: str) -> None:
        if a in med and b in med and med[b]:
            print(f"| {label} | {med[a] / med[b]:.2f} |")

    for n in (int(x) for x in args.procs.split(",")) if "enqueue" in args.cells else ():
        pgi = f"enqueue {n}: PostgreSQL INSERT"
        for f in flushes:
            store = f"enqueue {n}: store --flush {f}"
            ratio(f"enqueue {n}: store --flush {f} / PostgreSQL INSERT", store, pgi)
            ratio(f"enqueue {n}: store --flush {f} / its floor (tmpfile-{f})", store,
                  f"enqueue {n}: floor tmpfile-{f} (made in place)")
            ratio(f"enqueue {n}: floor tmpfile-{f} / floor tmp-{f}", f"enqueue {n}: floor tmpfile-{f} (made in place)",
                  f"enqueue {n}: floor tmp-{f} (shared tmp/)")
        ratio(f"enqueue {n}: store --flush {cf} / compared store", f"enqueue {n}: store --flush {cf}",
              f"enqueue {n}: compared store --flush {cf}")
        ratio(f"enqueue {n}: compared store / PostgreSQL INSERT", f"enqueue {n}: compared store --flush {cf}", pgi)
    if "batch" in args.cells:
        pgi = "enqueue 8: PostgreSQL INSERT"
        sb = f"batch of {BATCH}, 8: store send_batch"
        co = f"coalesced, 8 x {args.threads} threads: store send"
        ratio(f"batch of {BATCH}: store send_batch / PostgreSQL single-row INSERT", sb, pgi)
        ratio(f"batch of {BATCH}: store send_batch / PostgreSQL INSERT of {BATCH} rows", sb,
              f"batch of {BATCH}, 8: PostgreSQL INSERT of {BATCH} rows")
        ratio(f"batch of {BATCH}: store send_batch / its floor", sb, f"batch of {BATCH}, 8: floor tmpfile-syncfs-b{BATCH}")
        ratio("coalesced: store send / PostgreSQL single-row INSERT", co, pgi)
        ratio("coalesced: store send / compared store", co, f"coalesced, 8 x {args.threads} threads: compared store send")
        ratio(f"batch of {BATCH}: store send_batch / compared store", sb, f"batch of {BATCH}, 8: compared store send_batch")
        ratio(f"batch of {BATCH}: compared store send_batch / PostgreSQL INSERT of {BATCH} rows",
              f"batch of {BATCH}, 8: compared store send_batch", f"batch of {BATCH}, 8: PostgreSQL INSERT of {BATCH} rows")
    for c in (int(x) for x in args.consumers.split(",")) if "consume" in args.cells else ():
        pgc = f"poll+ack batch {BATCH}, {c}: PostgreSQL SKIP LOCKED"
        ratio(f"poll+ack {c}: store / PostgreSQL SKIP LOCKED + DELETE", f"poll+ack batch {BATCH}, {c}: store", pgc)
        ratio(f"poll+ack {c}: store / its floor", f"poll+ack batch {BATCH}, {c}: store",
              f"poll+ack batch {BATCH}, {c}: floor rename, read, rename, unlink")
        ratio(f"poll+ack {c}: floor / PostgreSQL SKIP LOCKED + DELETE",
              f"poll+ack batch {BATCH}, {c}: floor rename, read, rename, unlink", pgc)
        ratio(f"poll+ack {c}: store / compared store", f"poll+ack batch {BATCH}, {c}: store",
              f"poll+ack batch {BATCH}, {c}: compared store")
        ratio(f"poll+ack {c}: compared store / PostgreSQL SKIP LOCKED + DELETE",
              f"poll+ack batch {BATCH}, {c}: compared store", pgc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
