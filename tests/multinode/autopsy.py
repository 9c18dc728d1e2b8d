"""What every node of a cluster was doing when a multinode test failed, for the test report.

A multinode failure is most often a wait: a request that never returns because a node's threads
sit in a system call on the shared mount (a lock, a rename the volume does not answer) or in a
Python lock. The report alone shows only the client's timeout. So, for every node: whether its
gunicorn master and workers are alive, whether its mount answers a ``stat``, each process's
Python stacks (``py-spy dump``, which reads a live process from outside, as root, without
stopping it for long), the kernel's wait channel of every thread that is blocked in the kernel,
and the tail of the node's log. Then the file system's
state as ``scripts/gluster status`` or ``scripts/ceph status`` sees it. Each part is bounded in time and size, and a part
that cannot be read says why instead of failing the report.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.multinode import cluster as gl
from tests.multinode.cluster import Cluster, Node

LOG_LINES = 10
FRAMES = 5
DUMP_SECONDS = 20
PROBE_SECONDS = 5
#: the frames every thread starts with, left out of the report
_THREAD_START = frozenset({"Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap"})


def describe(cluster: Cluster) -> str:
    """Several hundred lines at most: every node's processes, stacks and log tail, then GlusterFS."""
    parts = [_node(node) for node in cluster.nodes]
    script = "scripts/ceph" if gl.file_system(cluster.volume) == "cephfs" else "scripts/gluster"
    try:
        parts.append(f"{script} status:\n" + gl.status(cluster.volume))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        parts.append(f"{script} status: {e}")
    return "\n".join(parts)


def _node(node: Node) -> str:
    lines = [f"=== {node.name} ({node.volume} mount {node.index}) ==="]
    server = node.server
    if server is None or server.proc is None:
        lines.append("not running (stopped or crashed by the test)")
    else:
        alive = server.proc.poll() is None
        state = "alive" if alive else "exited"
        lines.append(f"master {server.proc.pid}: {state}; mount: {_probe(node.mount)}")
        for pid in server.worker_pids():
            lines.append(f"worker {pid}:")
            lines.extend(f"  {line}" for line in _threads(pid))
    lines.append(f"--- last {LOG_LINES} lines of {node.log.name} ---")
    lines.append(_tail(node.log))
    return "\n".join(lines)


def _threads(pid: int) -> list[str]:
    """The process's threads grouped by what they wait for: the kernel's wait channel
    (``request_wait_answer``: a FUSE request the mount has not answered) and the innermost
    Python frames; the largest groups first."""
    beside = Path(sys.executable).parent / "py-spy"  # the test environment's own scripts
    spy = str(beside) if beside.exists() else shutil.which("py-spy")
    if spy is None:
        return ["py-spy is not installed"]
    try:
        done = subprocess.run([spy, "dump", "--json", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=DUMP_SECONDS)
        threads = json.loads(done.stdout)
    except subprocess.TimeoutExpired:
        return [f"py-spy dump took over {DUMP_SECONDS} s"]
    except ValueError:
        return [f"py-spy dump: {done.stderr.strip()[:300]}"]
    groups: Counter[str] = Counter()
    for thread in threads:
        own = [f for f in thread["frames"] if f["name"] not in _THREAD_START]
        frames = " < ".join(f"{f['name']} ({f['short_filename']}:{f['line']})" for f in own[:FRAMES])
        wchan = _wchan(pid, thread.get("os_thread_id"))
        groups[f"[{wchan}] {frames}"] += 1
    return [f"{n} x {what}" for what, n in groups.most_common()]


def _probe(mount: Path) -> str:
    """Whether the node's mount answers a ``stat`` (from a child process: a hung FUSE request
    blocks the caller, and a child can be killed)."""
    started = time.monotonic()
    try:
        done = subprocess.run(["stat", "-c", "%i", str(mount)], capture_output=True, text=True,
                              timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        return f"no answer to stat in {PROBE_SECONDS} s"
    if done.returncode != 0:
        return f"stat failed: {done.stderr.strip()}"
    return f"stat answered in {(time.monotonic() - started) * 1000:.0f} ms"


def _wchan(pid: int, tid: int | None) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/wchan").read_text().strip() or "running"
    except OSError:
        return "?"


def _tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-LOG_LINES:])
    except OSError as e:
        return f"(cannot read: {e})"
