#!/usr/bin/env python
"""Floors of a file-per-message durable send: the file-system work alone, no spoolq code.

    python bench/file_floor.py                                  # every mode, 8 processes
    python bench/file_floor.py --modes tmp-syncfs,tmpfile-syncfs,samedir-syncfs-b10 --reps 3

Each of ``--procs`` processes loops for ``--seconds``: make a 1 KiB message file in the bucket
directory its queue would use (every process writes into the same bucket, as senders to one
queue do), then make it durable. A mode is ``<make>-<flush>[-b<N>]``:

how the file is made (``<make>``)

* ``tmp``: written under a unique name in the one ``tmp/`` every process shares, renamed into
  the bucket (a cross-directory rename; how spoolq made message files before files were made in
  place);
* ``ptmp``: the same in a ``tmp/<pid>/`` of the process's own;
* ``samedir``: written under a dot-name in the bucket itself, renamed within the directory;
* ``tmpfile``: ``O_TMPFILE`` in the bucket (an inode with no name), written, then given its name
  with ``linkat`` through ``/proc/self/fd/N`` and ``AT_SYMLINK_FOLLOW`` (no rename; no root needed).

how it is made durable (``<flush>``)

* ``syncfs``: ``syncfs(2)`` of the file system (spoolq's ``--flush syncfs``);
* ``fsync``: the file ``fsync``'d before it is named, then its directory (``--flush fsync``);
* ``journal``: a 1 KiB record appended to the process's own journal file, ``fdatasync``
  (``--flush journal``);
* ``pjournal``: the same record written over a journal file the process wrote full of zeros (and
  fsync'd) before the cell: the file's size never changes, so an ``fdatasync`` has no metadata to
  commit (how ``--flush journal`` writes its prepared files; ``journal`` is how it wrote before,
  and still writes where no prepared file is ready);
* ``none``: no flush (what the file work costs in CPU and page cache).

``-b<N>`` makes N files before one flush (a batch, or N concurrent sends coalesced).

Besides msgs/s, each cell counts the write requests the disk completed per message
(``/proc/diskstats``): on a disk short of IOPS that sets the rate, and it moves far less with the
machine's load than rates do. And the CPU a message costs: the sending processes' own (user and
system time: the file-system calls and the flush) and the whole machine's (every core's busy time
over the cell divided by its messages: also the kernel's writeback and journal threads, and
whatever else the machine ran). Each cell gets a fresh directory, starts after an ``os.sync()`` and
is followed by a pause that lets the deletes of the one before settle (the disk may be mounted
with ``discard``). Cells alternate across ``--reps``; the median is printed.

:func:`message_op` is also what ``pg_bench.py`` runs as its floor cells, next to the store.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server_cpu import machine_busy_cpu

BODY = os.urandom(1024)
MAKES = ("tmp", "ptmp", "samedir", "tmpfile")
FLUSHES = ("syncfs", "fsync", "journal", "pjournal", "none")
PREWRITTEN = 64 << 20  # bytes of the pjournal file, written over from the start again when full
DEFAULT_MODES = ("tmp-syncfs,ptmp-syncfs,samedir-syncfs,tmpfile-syncfs,"
                 "tmp-syncfs-b10,ptmp-syncfs-b10,samedir-syncfs-b10,tmpfile-syncfs-b10,"
                 "tmp-journal,tmpfile-journal,tmp-fsync,tmpfile-fsync")

_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.syncfs.argtypes = [ctypes.c_int]
_libc.linkat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]


def parse_mode(mode: str) -> tuple[str, str, int]:
    """``(make, flush, batch)`` of a mode name; ValueError for a name that is not one."""
    parts = mode.split("-")
    batch = 1
    if len(parts) == 3 and parts[2].startswith("b") and parts[2][1:].isdigit():
        batch = int(parts[2][1:])
        parts = parts[:2]
    if len(parts) != 2 or parts[0] not in MAKES or parts[1] not in FLUSHES or batch < 1:
        raise ValueError(f"not a floor mode: {mode!r} (<{'|'.join(MAKES)}>-<{'|'.join(FLUSHES)}>[-bN])")
    return parts[0], parts[1], batch


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def message_op(mode: str, root: Path) -> Callable[[], int]:
    """One call makes one batch of message files under ``root`` the way ``mode`` says and flushes
    them; returns how many messages it made durable. Call it in the process that will run it."""
    make, flush, batch = parse_mode(mode)
    pid = os.getpid()
    root_s = str(root)
    tmp = f"{root_s}/tmp/{pid}" if make == "ptmp" else f"{root_s}/tmp"
    os.makedirs(tmp, exist_ok=True)
    root_fd = os.open(root_s, os.O_RDONLY | os.O_DIRECTORY)
    journal = os.open(f"{root_s}/journal-{pid}", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) \
        if flush == "journal" else -1
    if flush == "pjournal":
        journal = os.open(f"{root_s}/journal-{pid}", os.O_WRONLY | os.O_CREAT, 0o644)
        zeros = bytes(1 << 20)
        for _ in range(PREWRITTEN >> 20):
            _write_all(journal, zeros)
        os.fsync(journal)
    offset = [0]
    numbers = iter(range(1, 1 << 62))
    bucket_of: dict[int, str] = {}

    def bucket() -> str:
        second = int(time.time())
        path = bucket_of.get(second)
        if path is None:  # the store's bucket for a message sent this second: ready/<ksec>/<second>
            name = f"{second:011d}"
            path = f"{root_s}/ready/{name[:8]}/{name}"
            os.makedirs(path, exist_ok=True)
            bucket_of.clear()
            bucket_of[second] = path
        return path

    def make_one() -> str:
        directory = bucket()
        name = f"{pid}-{next(numbers)}"
        final = f"{directory}/{name}"
        if make == "tmpfile":
            fd = os.open(directory, os.O_WRONLY | os.O_TMPFILE, 0o644)
            try:
                _write_all(fd, BODY)
                if flush == "fsync":
                    os.fsync(fd)
                _check(_libc.linkat(_AT_FDCWD, f"/proc/self/fd/{fd}".encode(), _AT_FDCWD, final.encode(),
                                    _AT_SYMLINK_FOLLOW), "linkat")
            finally:
                os.close(fd)
            return directory
        temp = f"{directory}/.{name}" if make == "samedir" else f"{tmp}/{name}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, BODY)
            if flush == "fsync":
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, final)
        return directory

    def op() -> int:
        directories = {make_one() for _ in range(batch)}
        if flush == "syncfs":
            _check(_libc.syncfs(root_fd), "syncfs")
        elif flush == "fsync":
            for d in directories:
                dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        elif flush == "journal":
            _write_all(journal, BODY * batch)
            os.fdatasync(journal)
        elif flush == "pjournal":
            record = BODY * batch
            if offset[0] + len(record) > PREWRITTEN:
                offset[0] = 0
            os.pwrite(journal, record, offset[0])
            offset[0] += len(record)
            os.fdatasync(journal)
        return batch
    return op


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


def _worker(mode: str, root: Path, seconds: float, barrier: Any, out: Any) -> None:
    try:
        op = message_op(mode, root)
        barrier.wait(60)
        cpu0 = time.process_time()
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += op()
        out.put((n, time.process_time() - cpu0, None))
    except BaseException as e:
        barrier.abort()
        out.put((0, 0.0, f"{type(e).__name__}: {e}"))


@dataclass(frozen=True)
class Cell:
    """One cell's figures."""

    rate: float  #: messages made durable per second
    writes_per_msg: float | None  #: disk write requests per message (None where it cannot be told)
    sender_cpu_us: float  #: CPU (user + system) of the sending processes per message, in µs
    machine_cpu_us: float  #: every core's busy time per message (the kernel's flusher and journal threads too)


def run_cell(mode: str, base: Path, procs: int, seconds: float) -> Cell:
    """Run ``mode`` with ``procs`` processes for ``seconds``."""
    root = base / f"floor-{mode}-{time.time_ns()}"
    root.mkdir(parents=True)
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(procs + 1), ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(mode, root, seconds, barrier, out), daemon=True) for _ in range(procs)]
    try:
        for p in ps:
            p.start()
        os.sync()
        barrier.wait(60)  # every worker has made its op (a pjournal its file) before the counts start
        w0 = disk_writes(root)
        t0, busy0 = time.monotonic(), machine_busy_cpu()
        results = [out.get(timeout=seconds + 120) for _ in ps]
        span, busy = time.monotonic() - t0, machine_busy_cpu() - busy0
        w1 = disk_writes(root)
        for p in ps:
            p.join(30)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    errors = [e for _n, _cpu, e in results if e]
    if errors:
        raise RuntimeError(f"{mode}: {errors[0]}")
    total = sum(n for n, _cpu, _e in results)
    per_msg = (w1 - w0) / total if w0 is not None and w1 is not None and total else None
    sender_cpu = sum(cpu for _n, cpu, _e in results)
    return Cell(total / span, per_msg, 1e6 * sender_cpu / max(total, 1), 1e6 * busy / max(total, 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/var/tmp/spoolq-file-floor", help="on the disk to measure")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--settle", type=float, default=2.0, help="pause after each cell's delete")
    ap.add_argument("--modes", default=DEFAULT_MODES, help="comma-separated; see the module doc")
    args = ap.parse_args(argv)
    modes = args.modes.split(",")
    for m in modes:
        parse_mode(m)
    base = Path(args.dir)
    base.mkdir(parents=True, exist_ok=True)
    cells: dict[str, list[Cell]] = {}
    for rep in range(args.reps):
        for m in modes:
            c = run_cell(m, base, args.procs, args.seconds)
            cells.setdefault(m, []).append(c)
            shown = f"{c.writes_per_msg:5.2f}" if c.writes_per_msg is not None else "    ?"
            print(f"rep {rep + 1} {m:20s} {c.rate:9,.0f} msgs/s {shown} writes/msg "
                  f"{c.sender_cpu_us:6.0f} / {c.machine_cpu_us:6.0f} CPU µs/msg ({load()})", flush=True)
            os.sync()
            time.sleep(args.settle)
    base_mode = modes[0]
    print(f"\n{args.procs} processes, 1 KiB, {args.reps} x {args.seconds:g} s alternating cells, "
          f"medians; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {load()}")
    print(f"\n| mode | msgs/s | reps | disk writes / msg | senders' CPU µs / msg | machine CPU µs / msg "
          f"| x {base_mode} |\n|---|---|---|---|---|---|---|")
    ref = statistics.median(c.rate for c in cells[base_mode])
    for m in modes:
        med = statistics.median(c.rate for c in cells[m])
        known = [c.writes_per_msg for c in cells[m] if c.writes_per_msg is not None]
        w = f"{statistics.median(known):.2f}" if known else "?"
        sender = statistics.median(c.sender_cpu_us for c in cells[m])
        machine = statistics.median(c.machine_cpu_us for c in cells[m])
        reps = " / ".join(f"{c.rate:,.0f}" for c in cells[m])
        print(f"| {m} | {med:,.0f} | {reps} | {w} | {sender:,.0f} | {machine:,.0f} | {med / ref:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
