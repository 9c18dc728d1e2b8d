#!/usr/bin/env python
"""spoolq capacity benchmark: how many queued messages one node holds, and what a deep queue costs.

Run it as root (it makes loop-mounted file systems; never from pytest)::

    python bench/capacity_bench.py --probe                       # mkfs options side by side (~1 min)
    python bench/capacity_bench.py --messages 100000             # one quick pass on XFS and ext4
    nice -n 10 python bench/capacity_bench.py --messages 5000000 --fs xfs
    nice -n 10 python bench/capacity_bench.py --messages 5000000 --fs ext4

Each file system is made on a sparse file beside the checkout (``--dir``), mounted through a loop
device, used, unmounted and deleted before the next one: one at a time. What it measures there:

1. **Fill**: ``--messages`` 1 KiB messages into one standard queue through the store's
   ``send_batch`` (fsync off, ``--procs`` processes, then one ``sync``), plus a 1,000-message
   queue to compare with. Bytes and inodes the file system used per message (``statvfs``
   before and after, directories and journal included), and how many such messages a GiB of
   that file system holds (the first of its free bytes and free inodes to run out).
2. **Store start-up, cold**: the file system is unmounted and mounted again (its page cache is
   gone), then the time to open a ``FileStore``, replay journals, run one maintenance pass and
   claim and acknowledge the first message.
3. **Latency at depth** through the store contract: ``poll(limit=1)``, ``ack`` of that receipt,
   ``size(limit=1000)`` and ``counts()`` (exact, lists every message), p50/p99, the deep and the
   1,000-message queue sampled alternately so noise hits both alike.
4. **The server** (``spoolq serve``, 2 workers, cold cache again): time until ``/readyz``
   answers 200, then EmoDB ``poll``/``ack``/``size`` over HTTP at both depths.
5. **Recovery**: with 2,000 messages claimed for 2 s, the server is killed (SIGKILL), the file
   system remounted (cold) and the server started again: time to ``/readyz``, and time until
   every claim of the dead server is back in ``ready/`` (maintenance returns expired claims).
6. **Backup**: ``spoolq backup`` of the whole root into a second loop file system (ext4 with
   inline data, the densest layout; ``--no-backup`` skips it).

Bucket layout is reported too: how many entries the largest directory holds (ext4 without
``large_dir`` indexes about 10-12 million entries per directory).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT))

from spoolq.store import FileStore, OutgoingMessage  # noqa: E402
from tests.e2e.spoolq_server import Server, free_port  # noqa: E402

BODY_BYTES = 1024
SHALLOW = 1000
GIB = 1 << 30
PROBE_GIB = 16

#: the file systems of a full run: (label, type, mkfs options, mount options)
LAYOUTS: dict[str, tuple[str, list[str], str]] = {
    # XFS allocates inodes as it goes; a 2 KiB block holds a 1 KiB message file whole
    "xfs": ("xfs", ["-b", "size=2048"], "noatime"),
    # ext4 keeps the message file inside a 2 KiB inode (no data block) and one inode per 2.5 KiB
    "ext4": ("ext4", ["-I", "2048", "-i", "2560", "-O", "inline_data,large_dir", "-b", "4096"],
             "noatime,noinit_itable"),
}

#: mkfs options compared by --probe: (label, type, options)
PROBES: list[tuple[str, str, list[str]]] = [
    ("ext4 defaults", "ext4", []),
    ("ext4 -i 4096", "ext4", ["-i", "4096"]),
    ("ext4 -b 2048 -i 2560", "ext4", ["-b", "2048", "-i", "2560"]),
    ("ext4 -b 2048 -i 2400", "ext4", ["-b", "2048", "-i", "2400"]),
    ("ext4 -b 1024 -i 2400", "ext4", ["-b", "1024", "-i", "2400"]),
    ("ext4 -I 2048 -i 2560 inline_data", "ext4", ["-I", "2048", "-i", "2560", "-O", "inline_data"]),
    ("ext4 -I 2048 -i 2304 inline_data", "ext4", ["-I", "2048", "-i", "2304", "-O", "inline_data"]),
    ("xfs defaults", "xfs", []),
    ("xfs -b size=2048", "xfs", ["-b", "size=2048"]),
    ("xfs -b size=1024", "xfs", ["-b", "size=1024"]),
]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True, **kw)


# ============================================================== loop file systems


@dataclass
class LoopFs:
    """A file system on a sparse file, mounted at ``mnt`` through a loop device."""

    image: Path
    mnt: Path
    fstype: str
    mkfs: list[str]
    mount_opts: str

    def make(self, size: int) -> None:
        with open(self.image, "wb") as f:
            f.truncate(size)
        if self.fstype == "xfs":
            run(["mkfs.xfs", "-q", "-f", *self.mkfs, str(self.image)])
        else:
            run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,nodiscard", *self.mkfs, str(self.image)])
        self.mnt.mkdir(parents=True, exist_ok=True)
        self.mount()

    def mount(self) -> None:
        run(["mount", "-o", f"loop,{self.mount_opts}", str(self.image), str(self.mnt)])

    def umount(self) -> None:
        run(["umount", str(self.mnt)])

    def remount(self) -> None:
        """Unmount and mount again: the file system's page and inode caches are gone."""
        os.sync()
        self.umount()
        self.mount()

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.umount()
        with contextlib.suppress(OSError):
            self.mnt.rmdir()
        with contextlib.suppress(OSError):
            self.image.unlink()


@contextlib.contextmanager
def loop_fs(parent: Path, label: str, fstype: str, mkfs: list[str], mount_opts: str, size: int) -> Iterator[LoopFs]:
    fs = LoopFs(parent / f"{label}.img", parent / label, fstype, mkfs, mount_opts)
    fs.make(size)
    try:
        yield fs
    finally:
        fs.destroy()


@dataclass
class Usage:
    used_bytes: int
    used_inodes: int
    free_bytes: int  # available to an unprivileged user
    free_inodes: int
    total_bytes: int


def usage(path: Path) -> Usage:
    st = os.statvfs(path)
    return Usage((st.f_blocks - st.f_bfree) * st.f_frsize, st.f_files - st.f_ffree,
                 st.f_bavail * st.f_frsize, st.f_favail, st.f_blocks * st.f_frsize)


# ============================================================== filling


def _fill_entry(root: str, qname: str, n: int, batch: int, progress: Any) -> None:
    os.nice(10)
    store = FileStore(root, fsync=False)
    msg = OutgoingMessage(body=os.urandom(BODY_BYTES))
    sent = 0
    try:
        while sent < n:
            k = min(batch, n - sent)
            store.send_batch(qname, [msg] * k)
            sent += k
            progress.put(k)
    except BaseException as e:
        progress.put(f"{type(e).__name__}: {e}")
    finally:
        store.close()


def fill(ctx: Any, root: str, qname: str, n: int, procs: int, batch: int = 1000) -> float:
    """Send ``n`` 1 KiB messages with fsync=False send_batch from ``procs`` processes, then sync;
    returns the seconds it took (sync included)."""
    FileStore(root, fsync=False).create_queue(qname)
    progress = ctx.Queue()
    shares = [n // procs + (1 if i < n % procs else 0) for i in range(procs)]
    workers = [ctx.Process(target=_fill_entry, args=(root, qname, s, batch, progress), daemon=True)
               for s in shares if s]
    start = time.monotonic()
    for w in workers:
        w.start()
    done, mark = 0, 0.1
    try:
        while done < n:
            try:
                item = progress.get(timeout=10)
            except queue_mod.Empty:
                if not any(w.is_alive() for w in workers):
                    raise RuntimeError("fill workers exited early") from None
                continue
            if isinstance(item, str):
                raise RuntimeError(f"fill failed: {item}")
            done += item
            if n >= 100_000 and done >= mark * n:
                el = time.monotonic() - start
                log(f"  {qname}: {done:,}/{n:,} ({done / el:,.0f} msgs/s, {el:.0f} s)")
                mark += 0.1
    finally:
        for w in workers:
            w.join(timeout=60)
    os.sync()
    return time.monotonic() - start


def largest_directory(qpath: Path) -> tuple[int, int, int]:
    """(ready bucket directories, entries in the largest, ksec directories) of a standard queue."""
    buckets = largest = 0
    ksecs = os.listdir(qpath / "ready")
    for k in ksecs:
        for b in os.listdir(qpath / "ready" / k):
            buckets += 1
            with os.scandir(qpath / "ready" / k / b) as it:
                largest = max(largest, sum(1 for _ in it))
    return buckets, largest, len(ksecs)


# ============================================================== latency


def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


Samples = dict[str, dict[str, list[float]]]  # depth label -> op -> seconds


def store_latency(root: str, queues: dict[str, str], samples: int) -> Samples:
    """poll(limit=1)+ack, then size(limit=1000), then counts() (fewer samples: it lists everything);
    the depths alternate; every ack is followed by an untimed send so the depth stays put."""
    store = FileStore(root, fsync=True)
    refill = FileStore(root, fsync=False)
    msg = OutgoingMessage(body=os.urandom(BODY_BYTES))
    out: Samples = {d: {"poll": [], "ack": [], "size(limit=1000)": [], "counts() exact": []} for d in queues}
    pc = time.perf_counter
    try:
        for i in range(20 + samples):
            for depth, qname in queues.items():
                t0 = pc()
                got = store.poll(qname, limit=1, claim_ttl=300)
                t1 = pc()
                if not got:
                    raise RuntimeError(f"{qname} unexpectedly empty")
                store.ack(qname, [got[0].receipt])
                t2 = pc()
                refill.send(qname, msg)
                if i >= 20:
                    out[depth]["poll"].append(t1 - t0)
                    out[depth]["ack"].append(t2 - t1)
        for i in range(5 + samples):
            for depth, qname in queues.items():
                t0 = pc()
                store.size(qname, limit=1000)
                if i >= 5:
                    out[depth]["size(limit=1000)"].append(pc() - t0)
        for _ in range(3):
            for depth, qname in queues.items():
                t0 = pc()
                store.counts(qname)
                out[depth]["counts() exact"].append(pc() - t0)
    finally:
        store.close()
        refill.close()
    return out


def log_latency(lat: Samples) -> None:
    """The p50 and p99 of each operation at both depths, as soon as they are measured."""
    for op in lat["1k"]:
        a, d = lat["1k"][op], lat["deep"][op]
        log(f"  {op}: p50 {pct(a, .5) * 1000:.2f} / {pct(d, .5) * 1000:.2f} ms, "
            f"p99 {pct(a, .99) * 1000:.2f} / {pct(d, .99) * 1000:.2f} ms (1k / deep)")


def http_latency(url: str, queues: dict[str, str], samples: int) -> Samples:
    """EmoDB over HTTP: poll?limit=1, ack of that id, size?limit=1000; depths alternate."""
    out: Samples = {d: {"http poll": [], "http ack": [], "http size(limit=1000)": []} for d in queues}
    pc = time.perf_counter
    with requests.Session() as s:
        for i in range(20 + samples):
            for depth, qname in queues.items():
                base = f"{url}/queue/1/{qname}"
                t0 = pc()
                r = s.get(f"{base}/poll", params={"limit": 1, "ttl": 300})
                t1 = pc()
                r.raise_for_status()
                ids = [m["id"] for m in r.json()]
                if not ids:
                    raise RuntimeError(f"{qname} unexpectedly empty over HTTP")
                s.post(f"{base}/ack", json=ids).raise_for_status()
                t2 = pc()
                s.get(f"{base}/size", params={"limit": 1000}).raise_for_status()
                t3 = pc()
                s.post(f"{base}/send", json={"k": "x" * 1000}).raise_for_status()
                if i >= 20:
                    out[depth]["http poll"].append(t1 - t0)
                    out[depth]["http ack"].append(t2 - t1)
                    out[depth]["http size(limit=1000)"].append(t3 - t2)
    return out


# ============================================================== start-up, recovery, backup


def cold_store_start(root: str, qname: str) -> dict[str, float]:
    """Seconds to open the store, replay journals, run one maintenance pass, and claim+ack one message."""
    pc = time.perf_counter
    t0 = pc()
    store = FileStore(root)
    t1 = pc()
    store.recover_journals()
    t2 = pc()
    store.maintain()
    t3 = pc()
    got = store.poll(qname, limit=1, claim_ttl=60)
    store.ack(qname, [d.receipt for d in got])
    t4 = pc()
    store.close()
    return {"open": t1 - t0, "journals": t2 - t1, "maintain": t3 - t2, "first poll+ack": t4 - t3, "total": t4 - t0}


def start_server(root: Path, log_path: Path) -> tuple[Server, float, float]:
    """Start ``spoolq serve``; (server, seconds to /healthz, seconds to /readyz)."""
    server = Server(root=root, port=free_port(), config=None, workers=2, threads=8, log=log_path,
                    extra_args=("--allow-open",), node_id="capacity")
    t0 = time.monotonic()
    server.start(timeout=600)
    healthy = time.monotonic() - t0
    deadline = t0 + 600
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            if requests.get(server.url + "/readyz", timeout=60).status_code == 200:
                break
        time.sleep(0.05)
    return server, healthy, time.monotonic() - t0


def claimed_count(root: Path, qname: str) -> int:
    cdir = root / "queues" / qname / "claimed"
    return sum(len(os.listdir(cdir / s)) for s in os.listdir(cdir)) if cdir.is_dir() else 0


def recovery(fs: LoopFs, root: Path, qname: str, log_path: Path, claims: int = 2000) -> dict[str, float]:
    """Claims in flight, the server killed, the file system remounted: time to /readyz again and
    until every claim is back in ready/."""
    server, _h, _r = start_server(root, log_path)
    try:
        with requests.Session() as s:
            got = 0
            while got < claims:
                r = s.get(f"{server.url}/queue/1/{qname}/poll", params={"limit": 100, "ttl": 2})
                r.raise_for_status()
                got += len(r.json())
        os.sync()
        server.kill9()
    finally:
        server.stop()
    in_flight = claimed_count(root, qname)
    fs.remount()
    t0 = time.monotonic()
    server, _healthy, ready = start_server(root, log_path)
    try:
        while claimed_count(root, qname) and time.monotonic() - t0 < 600:
            time.sleep(0.05)
        back = time.monotonic() - t0
    finally:
        server.stop()
    return {"claims in flight": float(in_flight), "readyz": ready, "claims back": back}


def backup(root: Path, parent: Path, messages: int) -> dict[str, float]:
    size = max(2 * GIB, int(messages * 1.3 * 2560) + GIB)
    with loop_fs(parent, "capacity-backup", "ext4", ["-I", "2048", "-i", "2560", "-O", "inline_data,large_dir"],
                 "noatime,noinit_itable", size) as dest_fs:
        dest = dest_fs.mnt / "copy"
        env = {**os.environ, "SPOOLQ_ROOT": str(root)}
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "spoolq.cli", "backup", str(dest)], env=env,
                           capture_output=True, text=True)
        took = time.monotonic() - t0
        if r.returncode:
            raise RuntimeError(f"spoolq backup failed: {r.stderr.strip()[-500:]}")
        log(f"  backup: {r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ''}")
        t1 = time.monotonic()
        os.sync()
        return {"backup": took, "sync": time.monotonic() - t1}


# ============================================================== one file system


@dataclass
class Result:
    label: str
    mkfs: str
    messages: int
    fill_s: float = 0.0
    bytes_per_msg: float = 0.0
    inodes_per_msg: float = 0.0
    per_gib: float = 0.0
    binding: str = ""
    free_inodes: int = 0
    free_bytes: int = 0
    layout: tuple[int, int, int] = (0, 0, 0)
    start: dict[str, float] = field(default_factory=dict)
    server: dict[str, float] = field(default_factory=dict)
    recovery: dict[str, float] = field(default_factory=dict)
    backup: dict[str, float] = field(default_factory=dict)
    lat: Samples = field(default_factory=dict)


def fs_size(fstype: str, messages: int) -> int:
    per = 2700 if fstype == "ext4" else 3000  # bytes a message takes in the chosen layouts, with headroom
    return max(2 * GIB, int(messages * per * 1.25) + 2 * GIB)


def measure(ctx: Any, parent: Path, label: str, messages: int, procs: int, samples: int, *,
            http: bool, do_backup: bool, size: int | None = None) -> Result:
    fstype, mkfs, mount_opts = LAYOUTS[label]
    res = Result(label, f"mkfs.{fstype} {shlex.join(mkfs)}; mount -o {mount_opts}", messages)
    size = size or fs_size(fstype, messages)
    log(f"{label}: a {size / GIB:.1f} GiB sparse file, {res.mkfs}")
    with loop_fs(parent, f"capacity-{label}", fstype, mkfs, mount_opts, size) as fs:
        root = fs.mnt / "root"
        FileStore(root, fsync=False).close()
        os.sync()
        before = usage(fs.mnt)
        res.free_inodes, res.free_bytes = before.free_inodes, before.free_bytes
        log(f"{label}: filling {messages:,} messages with {procs} processes")
        res.fill_s = fill(ctx, str(root), "deep", messages, procs)
        after = usage(fs.mnt)
        res.bytes_per_msg = (after.used_bytes - before.used_bytes) / messages
        res.inodes_per_msg = (after.used_inodes - before.used_inodes) / messages
        by_bytes = before.free_bytes / res.bytes_per_msg
        by_inodes = before.free_inodes / res.inodes_per_msg if res.inodes_per_msg > 0 else float("inf")
        res.per_gib = min(by_bytes, by_inodes) / (size / GIB)
        res.binding = "inodes" if by_inodes < by_bytes else "bytes"
        log(f"{label}: {messages:,} in {res.fill_s:.0f} s; {res.bytes_per_msg:,.0f} B and "
            f"{res.inodes_per_msg:.3f} inodes per message; {res.per_gib:,.0f} per GiB ({res.binding} run out first)")
        fill(ctx, str(root), "shallow", SHALLOW, 1)
        res.layout = largest_directory(root / "queues" / "deep")
        queues = {"1k": "shallow", "deep": "deep"}

        fs.remount()
        log(f"{label}: cold store start-up")
        res.start = cold_store_start(str(root), "deep")
        log(f"  {res.start}")
        log(f"{label}: store latency, {samples} samples per depth")
        res.lat = store_latency(str(root), queues, samples)
        log_latency(res.lat)
        server_log = parent / f"capacity-{label}-server.log"
        if http:
            fs.remount()
            log(f"{label}: spoolq serve, cold")
            server, healthy, ready = start_server(root, server_log)
            try:
                res.server = {"healthz": healthy, "readyz": ready}
                log(f"  {res.server}")
                over_http = http_latency(server.url, queues, max(50, samples // 4))
                log_latency(over_http)
                for depth, ops in over_http.items():
                    res.lat[depth].update(ops)
            finally:
                server.stop()
            log(f"{label}: recovery after kill -9 with claims in flight")
            res.recovery = recovery(fs, root, "deep", server_log)
            log(f"  {res.recovery}")
        if do_backup:
            log(f"{label}: spoolq backup")
            res.backup = backup(root, parent, messages + SHALLOW)
            log(f"  {res.backup}")
        log(f"{label}: removing the file system")
    return res


def probe(ctx: Any, parent: Path, messages: int) -> list[tuple[str, float, float, float, str]]:
    """Bytes and inodes per message and messages per GiB, for each of ``PROBES`` (a 16 GiB file system:
    ext4's journal and XFS's log are a fixed cost, which a 1 GiB file system would exaggerate)."""
    rows = []
    for label, fstype, mkfs in PROBES:
        opts = "noatime,noinit_itable" if fstype == "ext4" else "noatime"
        with loop_fs(parent, "capacity-probe", fstype, mkfs, opts, PROBE_GIB * GIB) as fs:
            root = fs.mnt / "root"
            FileStore(root, fsync=False).close()
            os.sync()
            before = usage(fs.mnt)
            fill(ctx, str(root), "deep", messages, 1)
            after = usage(fs.mnt)
            b = (after.used_bytes - before.used_bytes) / messages
            i = (after.used_inodes - before.used_inodes) / messages
            by_bytes, by_inodes = before.free_bytes / b, before.free_inodes / i if i > 0 else float("inf")
            per_gib = min(by_bytes, by_inodes) / PROBE_GIB
            rows.append((label, b, i, per_gib, "inodes" if by_inodes < by_bytes else "bytes"))
            log(f"  {label}: {b:,.0f} B, {i:.3f} inodes per message, {per_gib:,.0f} per GiB")
    return rows


# ============================================================== report


def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def report(results: list[Result], samples: int, parent: Path) -> None:
    P = print
    for r in results:
        P(f"\n{r.label}: {r.mkfs}")
        P(f"  {r.messages:,} x 1 KiB messages filled in {r.fill_s:,.0f} s ({r.messages / r.fill_s:,.0f} msgs/s, "
          f"send_batch x1000, fsync off, then sync)")
        P(f"  on disk per message: {r.bytes_per_msg:,.0f} bytes, {r.inodes_per_msg:.3f} inodes; "
          f"{r.per_gib:,.0f} messages per GiB of file system ({r.binding} run out first; "
          f"{r.free_inodes:,} inodes and {r.free_bytes / GIB:.1f} GiB free when empty)")
        b, largest, ksecs = r.layout
        P(f"  layout: {b:,} ready buckets in {ksecs} ksec directories, at most {largest:,} entries in one")
        if r.start:
            P("  store start-up, cold cache (s): " + ", ".join(f"{k} {v:.2f}" for k, v in r.start.items()))
        if r.server:
            P(f"  spoolq serve, cold cache: /healthz after {r.server['healthz']:.2f} s, "
              f"/readyz after {r.server['readyz']:.2f} s")
        if r.recovery:
            P(f"  recovery after kill -9 with {r.recovery['claims in flight']:,.0f} claims in flight (claim ttl 2 s), "
              f"cold: /readyz after {r.recovery['readyz']:.2f} s, every claim back in ready/ after "
              f"{r.recovery['claims back']:.2f} s")
        if r.backup:
            P(f"  spoolq backup of {r.messages + SHALLOW:,} messages: {r.backup['backup']:,.0f} s "
              f"({(r.messages + SHALLOW) / r.backup['backup']:,.0f} msgs/s; then sync {r.backup['sync']:.0f} s)")
        if r.lat:
            P(f"  latency (ms), 1,000 messages vs {r.messages:,}; {samples} samples per depth "
              f"({max(50, samples // 4)} over HTTP, 3 for counts())")
            P(f"  {'op':>22} | {'1k p50':>8} {'1k p99':>8} | {'deep p50':>8} {'deep p99':>8} | "
              f"{'p50 x':>6} {'p99 x':>6}")
            for op in r.lat["1k"]:
                a, d = r.lat["1k"][op], r.lat["deep"][op]
                a50, a99, d50, d99 = pct(a, .5), pct(a, .99), pct(d, .5), pct(d, .99)
                P(f"  {op:>22} | {ms(a50):>8} {ms(a99):>8} | {ms(d50):>8} {ms(d99):>8} | "
                  f"{d50 / a50:>6.2f} {d99 / a99:>6.2f}")
    P("\nMachine")
    P(f"  cores {os.cpu_count()}; kernel {platform.release()}; Python {platform.python_version()}; "
      f"load average at end {os.getloadavg()[0]:.2f}; loop files in {parent}")
    P("  shared VM, other work running: absolute times are noisy, compare depths within one run")


def report_probe(rows: list[tuple[str, float, float, float, str]], messages: int) -> None:
    print(f"\nmkfs options for 1 KiB messages ({messages:,} on a {PROBE_GIB} GiB file system; per GiB: the first of "
          "free bytes or free inodes to run out)")
    print(f"  {'file system':<34} | {'bytes/msg':>9} {'inodes/msg':>10} | {'msgs per GiB':>12} | runs out of")
    for label, b, i, per_gib, binding in rows:
        print(f"  {label:<34} | {b:>9,.0f} {i:>10.3f} | {per_gib:>12,.0f} | {binding}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=5_000_000, help="depth of the deep queue (default 5,000,000)")
    ap.add_argument("--fs", action="append", choices=sorted(LAYOUTS), help="file systems to run (default: all)")
    ap.add_argument("--procs", type=int, default=2, help="fill processes (default 2)")
    ap.add_argument("--samples", type=int, default=400, help="latency samples per depth (default 400)")
    ap.add_argument("--no-http", action="store_true", help="skip the server, HTTP latency and recovery")
    ap.add_argument("--no-backup", action="store_true", help="skip spoolq backup")
    ap.add_argument("--probe", action="store_true", help="compare mkfs options on 1 GiB file systems instead")
    ap.add_argument("--probe-messages", type=int, default=20_000)
    ap.add_argument("--dir", default=None, help="where the sparse files go (default: beside the checkout)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("capacity_bench: needs root (mkfs, mount -o loop)", file=sys.stderr)
        return 2
    parent = Path(tempfile.mkdtemp(prefix="spoolq-capacity-", dir=args.dir or CHECKOUT.parent))
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["spoolq.store"])
    t0 = time.monotonic()
    try:
        if args.probe:
            report_probe(probe(ctx, parent, args.probe_messages), args.probe_messages)
            return 0
        results = [measure(ctx, parent, label, args.messages, args.procs, args.samples,
                           http=not args.no_http, do_backup=not args.no_backup)
                   for label in args.fs or sorted(LAYOUTS)]
    finally:
        for img in parent.glob("*.img"):
            LoopFs(img, img.with_suffix(""), "", [], "").destroy()
        for leftover in parent.iterdir():
            if leftover.is_file():
                leftover.unlink()
        with contextlib.suppress(OSError):
            parent.rmdir()
    print(f"\nspoolq capacity benchmark  (python bench/capacity_bench.py --messages {args.messages}"
          f"{''.join(' --fs ' + f for f in args.fs or [])}; wall {time.monotonic() - t0:,.0f} s)")
    print("=" * 100)
    report(results, args.samples, parent)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
