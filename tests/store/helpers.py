"""Helpers shared by the store tests and by the child processes they start (``workers.py``).

Bodies carry a self-check so a reader can tell a whole message from a torn one::

    b"SPQT" | sha256(rest) | rest        rest = b"<tag>:" + padding

:class:`Child` starts ``workers.py`` children. Kept free of pytest imports: ``workers.py``
imports this module in plain child processes.
"""

from __future__ import annotations

import hashlib
import os
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

BODY_MAGIC = b"SPQT"
WORKERS = Path(__file__).with_name("workers.py")
SERVICE = Path(__file__).resolve().parents[2] / "service"


class Child:
    """A ``workers.py`` child process with a line reader that never blocks past a deadline."""

    def __init__(self, *args: str, script: Path = WORKERS) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SERVICE), env.get("PYTHONPATH", "")) if p)
        self.args = args
        self.proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self._buf = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def readline(self, timeout: float = 30.0) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"child {self.args[0]} printed nothing in {timeout}s; stderr: {self.stderr()}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise AssertionError(f"child {self.args[0]} exited early (rc={self.proc.wait()}); "
                                         f"stderr: {self.stderr()}")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()

    def kill(self) -> None:
        """SIGKILL this child (by its own pid) and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(still running)"
        return self.proc.stderr.read().decode(errors="replace")[-3000:]

    def close(self) -> None:
        self.kill()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class BadBody(AssertionError):
    """A body that fails its self-check: a partial or corrupt message reached a reader."""


def make_body(tag: str, pad: int = 0, rnd: bool = False) -> bytes:
    """A self-checking body naming ``tag``, with ``pad`` bytes of filler (random if ``rnd``)."""
    filler = os.urandom(pad) if rnd else b"." * pad
    rest = tag.encode() + b":" + filler
    return BODY_MAGIC + hashlib.sha256(rest).digest() + rest


def check_body(body: bytes) -> str:
    """The tag of a well-formed body; raises :class:`BadBody` for anything else."""
    if len(body) < 36 or body[:4] != BODY_MAGIC:
        raise BadBody(f"body without the test header ({len(body)} bytes): {body[:40]!r}")
    rest = body[36:]
    if hashlib.sha256(rest).digest() != body[4:36]:
        raise BadBody(f"body fails its sha256 self-check ({len(body)} bytes): {rest[:40]!r}")
    tag, sep, _ = rest.partition(b":")
    if not sep:
        raise BadBody(f"body without a tag: {rest[:40]!r}")
    return tag.decode()


def tree(root: Path | str) -> dict[str, tuple[str, int, int, str]]:
    """A full recursive listing: relative path -> (kind, size, inode, content digest for files)."""
    root = str(root)
    out: dict[str, tuple[str, int, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", 0, st.st_ino, "")
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("f", st.st_size, st.st_ino, digest)
            else:
                out[rel] = ("o", st.st_size, st.st_ino, "")
    return out


def tree_diff(before: dict[str, tuple[str, int, int, str]], after: dict[str, tuple[str, int, int, str]]) -> str:
    """A readable description of how two listings differ ('' when they are equal)."""
    lines = [f"+ {p}" for p in sorted(after.keys() - before.keys())]
    lines += [f"- {p}" for p in sorted(before.keys() - after.keys())]
    lines += [f"~ {p}: {before[p]} -> {after[p]}" for p in sorted(before.keys() & after.keys())
              if before[p] != after[p]]
    return "\n".join(lines)


def files_under(path: Path | str) -> list[str]:
    """Every non-directory entry below ``path`` (relative), for debris checks."""
    path = str(path)
    found = []
    for dirpath, _dirnames, filenames in os.walk(path):
        found.extend(os.path.relpath(os.path.join(dirpath, n), path) for n in filenames)
    return sorted(found)


def journal_files(root: Path) -> list[str]:
    """The commit journal's files under ``root``, by name."""
    return sorted(n for n in os.listdir(root / "journal") if n.endswith(".jnl"))


def as_earlier_boot(root: Path) -> None:
    """Rename every journal file as if an earlier boot had written it (a power failure's aftermath)."""
    for n in journal_files(root):
        node, _boot, instance, pid, k = n[:-4].split("~")
        os.rename(root / "journal" / n, root / "journal" / f"{node}~{'0' * 16}~{instance}~{pid}~{k}.jnl")
