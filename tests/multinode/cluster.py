"""Several spoolq nodes on one shared file system, each through its own FUSE mount.

Two file systems, each built by a script inside a network namespace the script makes (traffic
only to loopback and that namespace):

* GlusterFS, ``scripts/gluster up``: glusterd, a replica-2 volume ``spq-rep`` and a
  distributed-replicate 2x2 volume ``spq-dist``, each FUSE-mounted ``MOUNTS`` times;
* CephFS, ``scripts/ceph up``: one monitor, one manager, two BlueStore OSDs (pools of size 2),
  an active and a standby MDS, and ``MOUNTS`` ``ceph-fuse`` mounts of the file system ``cephfs``.

The tier names a file system by its volume (``VOLUMES``: ``spq-rep``, ``spq-dist``, ``cephfs``).
A :class:`Cluster` starts one ``spoolq serve`` (its own gunicorn, free port, ``--node-id``,
``--flush fsync``) per mount of one volume, all serving the same data directory. A :class:`Node`
can be crashed the hard way (``kill -9`` of its gunicorn *and* of its FUSE client, as a machine
crash would) and brought back (remount, restart).

Used by the ``multinode`` test tier (``tests/multinode``) and by ``bench/scaleout_bench.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.spoolq_server import Server, free_port

REPO = Path(__file__).resolve().parents[2]
GLUSTER = REPO / "scripts" / "gluster"
CEPH = REPO / "scripts" / "ceph"
SYSTEM_DEPS = REPO / "scripts" / "system-deps"
GLUSTER_VOLUMES = ("spq-rep", "spq-dist")
CEPHFS = "cephfs"
VOLUMES = (*GLUSTER_VOLUMES, CEPHFS)
MOUNTS = 3
LOCK = Path("/tmp/spoolq-gluster.lock")
CEPH_LOCK = Path("/tmp/spoolq-ceph.lock")
#: the FUSE client programs, by file system
FUSE_CLIENTS = (b"glusterfs", b"ceph-fuse")


def gluster_dir() -> Path:
    return Path(os.environ.get("SPOOLQ_GLUSTER_DIR", "/tmp/spoolq-gluster"))


def ceph_dir() -> Path:
    return Path(os.environ.get("SPOOLQ_CEPH_DIR", "/tmp/spoolq-ceph"))


def file_system(volume: str) -> str:
    """``cephfs`` or ``glusterfs``: which file system (and session fixture) serves ``volume``."""
    return "cephfs" if volume == CEPHFS else "glusterfs"


def mount_path(volume: str, index: int) -> Path:
    if volume == CEPHFS:
        return ceph_dir() / "mnt" / str(index)
    return gluster_dir() / "mnt" / volume / str(index)


def unavailable(fs: str = "glusterfs") -> str | None:
    """Why ``fs`` (``glusterfs`` or ``cephfs``) cannot be brought up here, or None if it can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "multinode tier needs root (network namespace, FUSE mounts, file system daemons)"
    if not os.path.exists("/dev/fuse"):
        return "multinode tier needs FUSE: /dev/fuse is missing"
    group = "ceph" if fs == "cephfs" else "glusterfs"
    deps = subprocess.run([str(SYSTEM_DEPS), group], capture_output=True, text=True)
    if deps.returncode != 0:
        return f"multinode tier needs {fs}: {deps.stderr.strip() or f'scripts/system-deps {group} failed'}"
    if shutil.which("ip") is None:
        return "multinode tier needs iproute2 (ip netns)"
    probe = f"spqprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"multinode tier needs network namespaces: ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@contextlib.contextmanager
def gluster_lock(timeout: float = 900.0, lock: Path = LOCK) -> Iterator[None]:
    """One GlusterFS (``lock``: one CephFS) per machine: a second test session or bench waits for
    the first to finish."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another session holds {lock}") from None
                time.sleep(1.0)
        yield
    finally:
        os.close(fd)


def gluster(*args: str) -> str:
    done = subprocess.run([str(GLUSTER), *args], capture_output=True, text=True, timeout=400)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/gluster {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def ceph(*args: str, timeout: float = 400) -> str:
    done = subprocess.run([str(CEPH), *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/ceph {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def remount(volume: str, index: int) -> None:
    """Unmount mount ``index`` of ``volume`` (even if its FUSE client was killed) and mount it again."""
    if volume == CEPHFS:
        ceph("remount", str(index))
    else:
        gluster("remount", volume, str(index))


def status(volume: str) -> str:
    """What the file system serving ``volume`` says about itself (for failure reports)."""
    return ceph("status", timeout=60) if volume == CEPHFS else gluster("status")


@contextlib.contextmanager
def running_gluster(mounts: int = MOUNTS) -> Iterator[Path]:
    """Bring GlusterFS up (cleaning any stale earlier run first), yield its directory, tear it down."""
    with gluster_lock():
        try:
            gluster("up", str(mounts))
            yield gluster_dir()
        finally:
            gluster("down")


@contextlib.contextmanager
def running_ceph(mounts: int = MOUNTS, keep_logs: Path | None = None) -> Iterator[Path]:
    """Bring CephFS up (cleaning any stale earlier run first), yield its directory, tear it down.
    With ``keep_logs``, the daemons' logs are copied there before the teardown deletes them."""
    with gluster_lock(lock=CEPH_LOCK):
        try:
            ceph("up", str(mounts))
            yield ceph_dir()
        finally:
            if keep_logs is not None:
                with contextlib.suppress(OSError):
                    shutil.copytree(ceph_dir() / "log", keep_logs, dirs_exist_ok=True)
            ceph("down")


def gluster_links(volume: str, index: int) -> dict[str, bool]:
    """Whether mount ``index`` of ``volume`` is connected to each brick, by the mount's client
    translator (``<vol>-client-N``), read from the mount's ``.meta`` tree (``connected = 1``);
    empty when the mount cannot be read."""
    graph = mount_path(volume, index) / ".meta" / "graphs" / "active"
    links: dict[str, bool] = {}
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(graph)):
            if entry.startswith(f"{volume}-client-"):
                private = (graph / entry / "private").read_text(errors="replace")
                links[entry] = any(line.replace(" ", "") == "connected=1" for line in private.splitlines())
    return links


def wait_gluster_links(volume: str, mounts: int = MOUNTS, within: float = 120.0) -> dict[int, dict[str, bool]]:
    """Wait until every mount of ``volume`` is connected to every brick (a FUSE client reconnects to
    a restarted brick after a back-off, longer on a busy machine); the last links seen per mount."""
    deadline = time.monotonic() + within
    while True:
        links = {i: gluster_links(volume, i) for i in range(1, mounts + 1)}
        if all(v and all(v.values()) for v in links.values()) or time.monotonic() > deadline:
            return links
        time.sleep(1.0)


def gluster_mount_log(volume: str, index: int, lines: int = 40) -> str:
    """The last connection and error lines of mount ``index``'s client log (scripts/gluster)."""
    log = gluster_dir() / "log" / f"mnt-{volume}-{index}.log"
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError as e:
        return f"{log}: {e}"
    picked = [t for t in text if " E " in t or " W " in t or "onnect" in t]
    return "\n".join(picked[-lines:])


def fuse_client_pid(mount: Path) -> int | None:
    """The FUSE client process (glusterfs or ceph-fuse) serving ``mount``."""
    want = str(mount).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(FUSE_CLIENTS) and want in argv:
            return int(entry)
    return None


@dataclass
class Node:
    name: str
    volume: str
    index: int
    root: Path  # the shared data directory, seen through this node's mount
    log: Path
    extra_args: tuple[str, ...] = ()
    server: Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    @property
    def mount(self) -> Path:
        return mount_path(self.volume, self.index)

    def start(self) -> None:
        self.server = Server(root=self.root, port=free_port(), config=None, workers=2, threads=16,
                             log=self.log, node_id=self.name,
                             extra_args=("--flush", "fsync", *self.extra_args))
        self.server.start(timeout=60)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def crash(self) -> None:
        """kill -9 this node's gunicorn and its FUSE client: unflushed state on it is gone."""
        pid = fuse_client_pid(self.mount)
        if self.server is not None and self.server.proc is not None:
            self.server.kill9()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def revive(self) -> None:
        """Remount (the FUSE client may be dead) and start the node again on the same data."""
        remount(self.volume, self.index)
        self.start()


@dataclass
class Cluster:
    volume: str
    nodes: list[Node] = field(default_factory=list)

    @classmethod
    def start(cls, volume: str, logs: Path, count: int = MOUNTS, extra_args: tuple[str, ...] = ()) -> Cluster:
        data = f"spoolq-{uuid.uuid4().hex[:8]}"
        cluster = cls(volume)
        for i in range(1, count + 1):
            node = Node(name=f"node{i}", volume=volume, index=i, root=mount_path(volume, i) / data,
                        log=logs / f"{volume}-node{i}.log", extra_args=extra_args)
            cluster.nodes.append(node)
        try:
            for node in cluster.nodes:
                node.start()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]
