"""A crash disk: real ext4 on a block device with a volatile write cache that can lose power.

``kill -9`` of a process keeps the kernel's page cache, so it proves nothing about flushes. This
module gives a test (or a person, through ``scripts/crashdisk``) an ext4 file system whose disk
behaves like one with a write cache, and a power cut that loses that cache:

* **The disk** is one file, ``disk.img``, exposed by a small FUSE daemon (``mfusepy`` over
  Debian's libfuse3) over a backing file. Writes land in an in-memory cache of 4 KiB blocks,
  reads see them, and only a FUSE ``fsync`` applies the cache to the backing file: the backing
  file is the platter, the cache the volatile write cache. (``flush``, sent on every close, is
  not durability and applies nothing.)
* **The file system** is ext4 (``mkfs.ext4 -E nodiscard``) on a loop device over ``disk.img``.
  ext4's cache flushes (journal commits, ``fsync``, ``syncfs``) reach the loop device as flush
  requests, which the loop driver turns into an ``fsync`` of ``disk.img``: a FUSE ``fsync``.
* **A power cut** (:meth:`CrashDisk.cut`) first stops the disk (every later request hangs, as on
  a dead disk), optionally persists a random subset of the pending blocks, some of them torn at
  a 512-byte sector boundary (a real disk may write its cache out in any order), then kills the
  processes using the file system and the daemon with SIGKILL, and takes down the lazy-unmounted
  ext4, the loop device and the FUSE mount, each under a timeout. A FUSE connection that stays
  stuck is aborted through ``/sys/fs/fuse/connections/<n>/abort``.
* **The reboot** (:meth:`CrashDisk.boot`) starts a new daemon on the same backing file, a new loop
  device and mounts ext4 again, which replays ext4's journal; ``e2fsck -fn`` on the backing file
  (after a clean unmount) tells whether the file system survived (:meth:`CrashDisk.fsck`).

Everything lives under one work directory (backing file, mount points, the daemon's control
socket, ``state.json``); loop devices are taken with ``losetup --find`` and recorded, so
concurrent runs never share a device or a mount point. :meth:`CrashDisk.destroy` tears everything
down and is safe to call at any point, also from another process (``scripts/crashdisk destroy``).

Needs root, ``/dev/fuse``, loop devices, ``mkfs.ext4``/``e2fsck`` (e2fsprogs), libfuse3 (fuse3) and
the ``mfusepy`` package; :func:`unavailable` says which is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLOCK = 4096
SECTOR = 512
IMAGE = "disk.img"
#: every command that touches the kernel's view of the disk runs under this timeout (seconds)
COMMAND_TIMEOUT = 20.0
#: how long a cut ``when_pending`` waits for that many pending blocks before it cuts anyway (seconds)
PENDING_WAIT = COMMAND_TIMEOUT / 2


# ----------------------------------------------------------------------------- the FUSE daemon


class CachedDisk:
    """The disk's contents: a backing file plus a volatile cache of 4 KiB blocks (the daemon's state)."""

    def __init__(self, backing: str) -> None:
        self.fd = os.open(backing, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.cache: dict[int, bytes] = {}
        self.lock = threading.Lock()
        self.powered = True
        self.fsyncs = 0
        self.writes = 0

    def _block(self, n: int) -> bytes:
        cached = self.cache.get(n)
        if cached is not None:
            return cached
        data = os.pread(self.fd, BLOCK, n * BLOCK)
        return data + b"\0" * (BLOCK - len(data))

    def read(self, size: int, offset: int) -> bytes:
        size = max(0, min(size, self.size - offset))
        out = bytearray()
        with self.lock:
            pos = offset
            while pos < offset + size:
                n, within = divmod(pos, BLOCK)
                take = min(BLOCK - within, offset + size - pos)
                out += self._block(n)[within:within + take]
                pos += take
        return bytes(out)

    def write(self, data: bytes, offset: int) -> int:
        if offset + len(data) > self.size:
            raise OSError(errno.ENOSPC, "write past the end of the disk")
        with self.lock:
            pos = 0
            while pos < len(data):
                n, within = divmod(offset + pos, BLOCK)
                take = min(BLOCK - within, len(data) - pos)
                if within == 0 and take == BLOCK:
                    self.cache[n] = bytes(data[pos:pos + BLOCK])
                else:
                    block = bytearray(self._block(n))
                    block[within:within + take] = data[pos:pos + take]
                    self.cache[n] = bytes(block)
                pos += take
            self.writes += 1
        return len(data)

    def apply(self) -> None:
        """The cache flush: every pending block reaches the backing file."""
        with self.lock:
            for n, block in sorted(self.cache.items()):
                os.pwrite(self.fd, block, n * BLOCK)
            self.cache.clear()
            self.fsyncs += 1

    def lose_power(self, rng: random.Random, persist: float, torn: float, when_pending: int = 0,
                   wait: float = 0.0) -> dict[str, int]:
        """Stop the disk; each pending block reaches the backing file with probability ``persist``,
        torn (only its first 1-7 sectors written) with probability ``torn``; the rest is lost.

        ``when_pending``: first wait (up to ``wait`` seconds) until at least that many blocks are
        pending, and cut at that very moment (under the lock no write or flush gets past), so a
        test that means to tear pending blocks never cuts just after a flush emptied the cache."""
        deadline = time.monotonic() + wait
        while True:
            with self.lock:
                if len(self.cache) >= when_pending or time.monotonic() >= deadline:
                    return self._lose_power_locked(rng, persist, torn)
            time.sleep(0.0005)

    def _lose_power_locked(self, rng: random.Random, persist: float, torn: float) -> dict[str, int]:
        """:meth:`lose_power` with the lock held."""
        self.powered = False
        pending = sorted(self.cache.items())
        rng.shuffle(pending)  # written back in any order: the order does not matter, the subset does
        persisted = torn_blocks = 0
        for n, block in pending:
            if rng.random() >= persist:
                continue
            if rng.random() < torn:
                sectors = rng.randint(1, BLOCK // SECTOR - 1)
                os.pwrite(self.fd, block[:sectors * SECTOR], n * BLOCK)
                torn_blocks += 1
            else:
                os.pwrite(self.fd, block, n * BLOCK)
            persisted += 1
        self.cache.clear()
        return {"pending": len(pending), "persisted": persisted, "torn": torn_blocks}


def _hang_if_off(disk: CachedDisk) -> None:
    """A disk without power answers nothing: the request waits until the daemon is killed."""
    while not disk.powered:
        time.sleep(3600)


def serve(backing: str, mountpoint: str, control: str) -> None:
    """Run the FUSE daemon in the foreground (``scripts/crashdisk _serve``)."""
    import mfusepy

    disk = CachedDisk(backing)
    now = time.time()

    class DiskImage(mfusepy.Operations):  # type: ignore[misc]
        use_ns = True

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            ns = int(now * 1e9)
            if path == "/":
                return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2,
                        "st_atime": ns, "st_mtime": ns, "st_ctime": ns}
            if path == f"/{IMAGE}":
                return {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": disk.size,
                        "st_atime": ns, "st_mtime": ns, "st_ctime": ns}
            raise mfusepy.FuseOSError(errno.ENOENT)

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", IMAGE]

        def open(self, path: str, flags: int) -> int:
            if path != f"/{IMAGE}":
                raise mfusepy.FuseOSError(errno.ENOENT)
            return 0

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            _hang_if_off(disk)
            return disk.read(size, offset)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            _hang_if_off(disk)
            return disk.write(data, offset)

        def truncate(self, path: str, length: int, fh: int | None = None) -> int:
            return 0 if length == disk.size else -errno.EINVAL

        def flush(self, path: str, fh: int) -> int:
            return 0  # called on close: not a cache flush

        def fsync(self, path: str, datasync: int, fh: int) -> int:
            _hang_if_off(disk)
            disk.apply()
            return 0

    def control_loop(listener: socket.socket) -> None:
        while True:
            conn, _ = listener.accept()
            with conn:
                words = conn.makefile("r").readline().split()
                if words[:1] == ["cut"]:
                    seed, persist, torn, when_pending = int(words[1]), float(words[2]), float(words[3]), int(words[4])
                    reply = disk.lose_power(random.Random(seed), persist, torn, when_pending, PENDING_WAIT)
                else:
                    with disk.lock:
                        reply = {"pending": len(disk.cache), "fsyncs": disk.fsyncs, "writes": disk.writes}
                conn.sendall((json.dumps(reply) + "\n").encode())

    with contextlib.suppress(FileNotFoundError):
        os.unlink(control)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(control)
    listener.listen(4)
    threading.Thread(target=control_loop, args=(listener,), daemon=True).start()
    mfusepy.FUSE(DiskImage(), mountpoint, foreground=True, nothreads=False,
                 fsname=f"spoolq-crashdisk:{os.path.dirname(os.path.abspath(backing))}")


# ----------------------------------------------------------------------------- the controller


def unavailable() -> str | None:
    """Why a crash disk cannot run here, or None."""
    if os.geteuid() != 0:
        return "the crash disk needs root (loop devices, mounts)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices (/dev/loop-control)"
    for tool in ("mkfs.ext4", "e2fsck", "losetup", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} not found (scripts/system-deps crashdisk)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError, AttributeError) as e:
        return f"mfusepy/libfuse3 not usable: {e} (scripts/system-deps crashdisk; pip install mfusepy)"
    return None


def _run(*cmd: str, timeout: float = COMMAND_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise CrashDiskError(f"{' '.join(cmd)} did not finish in {timeout:g}s") from e
    if check and done.returncode != 0:
        raise CrashDiskError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done


class CrashDiskError(RuntimeError):
    """A step of the crash disk's life cycle failed (the message names the command)."""


@dataclass
class CutReport:
    """What one power cut did: pending blocks at the cut, how many reached the disk, how many torn."""

    pending: int
    persisted: int
    torn: int
    seconds: float


def _mounts() -> list[tuple[str, str, str]]:
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                out.append((parts[0].replace("\\040", " "), parts[1].replace("\\040", " "), parts[2]))
    return out


def _mounted(path: Path) -> bool:
    return any(m == str(path) for _, m, _ in _mounts())


class CrashDisk:
    """One crash disk under ``workdir``; ``mountpoint`` is the ext4 while :meth:`boot` has it up."""

    def __init__(self, workdir: Path | str, size_mib: int = 64) -> None:
        self.workdir = Path(workdir).resolve()
        self.size_mib = size_mib
        self.backing = self.workdir / "backing.img"
        self.fuse_dir = self.workdir / "fuse"
        self.mountpoint = self.workdir / "mnt"
        self.control = str(self.workdir / "control.sock")
        self.state_file = self.workdir / "state.json"
        self.daemon_pid = 0
        self.loop = ""
        self.cuts = 0
        self._load()

    # state survives between processes so that `scripts/crashdisk` can drive one disk step by step
    def _load(self) -> None:
        with contextlib.suppress(FileNotFoundError, ValueError):
            state = json.loads(self.state_file.read_text())
            self.daemon_pid, self.loop = int(state["daemon_pid"]), str(state["loop"])
            self.cuts, self.size_mib = int(state["cuts"]), int(state["size_mib"])

    def _save(self) -> None:
        self.state_file.write_text(json.dumps({"daemon_pid": self.daemon_pid, "loop": self.loop,
                                               "cuts": self.cuts, "size_mib": self.size_mib}))

    def create(self) -> CrashDisk:
        """A new backing file with a fresh ext4, booted."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for d in (self.fuse_dir, self.mountpoint):
            d.mkdir(exist_ok=True)
        with open(self.backing, "wb") as f:
            f.truncate(self.size_mib << 20)
        _run("mkfs.ext4", "-q", "-F", "-E", "nodiscard", "-b", str(BLOCK), "-N", str(self.size_mib * 512),
             str(self.backing))
        self._save()
        self.boot()
        return self

    def boot(self) -> None:
        """Power on: daemon, loop device, mount (ext4 replays its journal)."""
        if _mounted(self.fuse_dir) or _mounted(self.mountpoint) or _daemons_of(self.backing):
            raise CrashDiskError(f"{self.workdir} is still up: cut, shut down or destroy it first")
        self._start_daemon()
        done = _run("losetup", "--find", "--show", str(self.fuse_dir / IMAGE))
        self.loop = done.stdout.strip()
        self._save()
        _run("mount", "-t", "ext4", self.loop, str(self.mountpoint))

    def _start_daemon(self) -> None:
        env = dict(os.environ)
        checkout = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH", "")) if p)
        log = open(self.workdir / "daemon.log", "ab")  # noqa: SIM115 (handed to the child)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "tests.powercut.crashdisk", "_serve",
                                     str(self.backing), str(self.fuse_dir), self.control],
                                    stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        finally:
            log.close()
        self.daemon_pid = proc.pid
        self._save()
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while not (_mounted(self.fuse_dir) and os.path.exists(self.control)):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.workdir / "daemon.log").read_text(errors="replace")[-1500:]
                raise CrashDiskError(f"the crash-disk daemon did not come up: {tail}")
            time.sleep(0.02)
        self._reap_later(proc)

    @staticmethod
    def _reap_later(proc: subprocess.Popen[bytes]) -> None:
        threading.Thread(target=proc.wait, daemon=True).start()

    def _ask(self, line: str) -> dict[str, int]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(COMMAND_TIMEOUT)
            s.connect(self.control)
            s.sendall(line.encode() + b"\n")
            return dict(json.loads(s.makefile("r").readline()))

    def stats(self) -> dict[str, int]:
        """The daemon's counters: pending blocks, FUSE fsyncs (cache flushes) and writes so far."""
        return self._ask("stats")

    def cut(self, seed: int = 0, persist: float = 0.0, torn: float = 0.0,
            kill: Iterable[int] = (), when_pending: int = 0) -> CutReport:
        """Power cut: the disk stops (``persist``/``torn``/``when_pending``: see
        :meth:`CachedDisk.lose_power`; ``when_pending`` waits at most :data:`PENDING_WAIT`), then
        the processes ``kill`` and every other process with a file open under the mount point get
        SIGKILL, and the daemon, the ext4, the loop device and the FUSE mount go down."""
        start = time.monotonic()
        report = {"pending": 0, "persisted": 0, "torn": 0}
        with contextlib.suppress(OSError, ValueError):
            report = self._ask(f"cut {seed} {persist} {torn} {when_pending}")
        victims = set(kill) | self._users()
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._kill_daemon()
        self._take_down()
        self.cuts += 1
        self._save()
        return CutReport(report["pending"], report["persisted"], report["torn"], time.monotonic() - start)

    def _users(self) -> set[int]:
        """Processes (not this one) with a cwd, root or open file under the mount point."""
        found: set[int] = set()
        prefix = str(self.mountpoint) + "/"
        for pid_s in os.listdir("/proc"):
            if not pid_s.isdigit() or int(pid_s) == os.getpid():
                continue
            base = f"/proc/{pid_s}"
            try:
                links = [os.readlink(f"{base}/cwd")]
                links += [os.readlink(f"{base}/fd/{fd}") for fd in os.listdir(f"{base}/fd")]
            except OSError:
                continue
            if any(link == str(self.mountpoint) or link.startswith(prefix) for link in links):
                found.add(int(pid_s))
        return found

    def _kill_daemon(self) -> None:
        if self.daemon_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.daemon_pid, signal.SIGKILL)
            deadline = time.monotonic() + COMMAND_TIMEOUT
            while os.path.exists(f"/proc/{self.daemon_pid}") and time.monotonic() < deadline:
                with contextlib.suppress(ChildProcessError, OSError):
                    if os.waitpid(self.daemon_pid, os.WNOHANG)[0]:
                        break
                if _zombie(self.daemon_pid):
                    break
                time.sleep(0.01)
            self.daemon_pid = 0
            self._save()

    def _take_down(self) -> None:
        """Lazy-unmount the ext4, detach the loop device, lazy-unmount FUSE (aborting it if stuck)."""
        if _mounted(self.mountpoint):
            _run("umount", "-l", str(self.mountpoint), check=False)
        if self.loop:
            _run("losetup", "-d", self.loop, check=False)
            self.loop = ""
            self._save()
        if _mounted(self.fuse_dir):
            self._abort_fuse()
            _run("umount", "-l", str(self.fuse_dir), check=False)

    def _abort_fuse(self) -> None:
        """Abort this disk's FUSE connection (a dead daemon's requests then fail at once)."""
        try:
            dev = os.stat(self.fuse_dir).st_dev
        except OSError:
            return
        conns = Path("/sys/fs/fuse/connections")
        if not conns.is_dir() or not any(conns.iterdir()):
            _run("mount", "-t", "fusectl", "fusectl", str(conns), check=False)
        abort = conns / str(os.minor(dev)) / "abort"
        with contextlib.suppress(OSError):
            abort.write_text("1")

    def shutdown(self) -> None:
        """A clean power-off: unmount ext4 (which flushes), then the loop device and the daemon."""
        if _mounted(self.mountpoint):
            _run("umount", str(self.mountpoint))
        if self.loop:
            _run("losetup", "-d", self.loop, check=False)
            self.loop = ""
        self._kill_daemon()
        if _mounted(self.fuse_dir):
            _run("umount", "-l", str(self.fuse_dir), check=False)
        self._save()

    def fsck(self) -> str:
        """``e2fsck -fn`` of the backing file (the disk must be down); its output if it found a problem."""
        done = _run("e2fsck", "-fn", str(self.backing), check=False, timeout=120)
        return "" if done.returncode == 0 else f"e2fsck exit {done.returncode}:\n{done.stdout[-3000:]}"

    def reboot_checked(self) -> str:
        """After a cut: boot (journal replay), clean shutdown, ``e2fsck -fn``, boot again.
        Returns e2fsck's complaint ('' when the file system is clean)."""
        self.boot()
        self.shutdown()
        problem = self.fsck()
        self.boot()
        return problem

    def destroy(self) -> None:
        """Tear everything down (processes on the disk, daemons, mounts, loop devices) and delete
        the files. Finds what to take down from the system, not only from ``state.json``, so it
        also cleans up after a run that died half-way."""
        with contextlib.suppress(OSError):
            for pid in self._users():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        loops = {self.loop, *_loops_of(self.fuse_dir / IMAGE)} - {""}  # before FUSE goes: named by its path
        for pid in [self.daemon_pid, *_daemons_of(self.backing)]:
            self.daemon_pid = pid
            self._kill_daemon()
        for _ in range(10):  # stacked mounts come off one at a time, deepest first; FUSE last
            mine = sorted((m for _, m, _ in _mounts() if m.startswith(f"{self.workdir}/")),
                          key=lambda m: (m == str(self.fuse_dir), -len(m)))
            if not mine:
                break
            for mountpoint in mine:
                if mountpoint == str(self.fuse_dir):
                    for loop in loops:
                        _run("losetup", "-d", loop, check=False)
                    self._abort_fuse()
                _run("umount", "-l", mountpoint, check=False)
        for loop in loops:
            _run("losetup", "-d", loop, check=False)
        self.loop = ""
        shutil.rmtree(self.workdir, ignore_errors=True)


def _daemons_of(backing: Path) -> list[int]:
    """Pids of crash-disk daemons serving ``backing``."""
    found = []
    for pid_s in os.listdir("/proc"):
        if pid_s.isdigit():
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{pid_s}/cmdline").read_bytes().split(b"\0")
                if b"_serve" in args and str(backing).encode() in args:
                    found.append(int(pid_s))
    return found


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _loops_of(image: Path) -> list[str]:
    """Loop devices whose backing file is ``image`` (matched by name: the file may be gone)."""
    done = _run("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE", check=False)
    out = []
    for line in done.stdout.splitlines():
        name, _, back = line.partition(" ")
        if back.strip().removesuffix(" (deleted)") == str(image):
            out.append(name)
    return out


# ----------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/crashdisk", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("create", help="make a new crash disk under DIR and mount it at DIR/mnt")
    p.add_argument("dir", type=Path)
    p.add_argument("--size-mib", type=int, default=64)
    p = sub.add_parser("cut", help="cut the power (kills every process using DIR/mnt)")
    p.add_argument("dir", type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--persist", type=float, default=0.0, help="share of pending blocks that reach the disk")
    p.add_argument("--torn", type=float, default=0.0, help="share of those written torn")
    p.add_argument("--when-pending", type=int, default=0,
                   help=f"first wait (up to {PENDING_WAIT:g} s) until this many blocks are pending")
    for name, text in (("boot", "power on again: mount, replaying ext4's journal"),
                       ("fsck", "clean shutdown, then e2fsck -fn of the backing file"),
                       ("stats", "pending blocks, flushes and writes of the running disk"),
                       ("destroy", "take everything down and delete DIR")):
        sub.add_parser(name, help=text).add_argument("dir", type=Path)
    p = sub.add_parser("_serve")
    for arg in ("backing", "mountpoint", "control"):
        p.add_argument(arg)
    args = parser.parse_args(argv)
    if args.command == "_serve":
        serve(args.backing, args.mountpoint, args.control)
        return 0
    reason = unavailable()
    if reason is not None:
        print(f"crashdisk: {reason}", file=sys.stderr)
        return 1
    disk = CrashDisk(args.dir, getattr(args, "size_mib", 64))
    if args.command == "create":
        disk.create()
        print(disk.mountpoint)
    elif args.command == "cut":
        print(disk.cut(args.seed, args.persist, args.torn, when_pending=args.when_pending))
    elif args.command == "boot":
        disk.boot()
        print(disk.mountpoint)
    elif args.command == "fsck":
        disk.shutdown()
        problem = disk.fsck()
        print(problem or "clean")
        return 1 if problem else 0
    elif args.command == "stats":
        print(json.dumps(disk.stats()))
    else:
        disk.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
