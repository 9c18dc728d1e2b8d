"""``spoolq serve --in-memory``: a data directory in memory, for test suites that want speed over
durability (ElasticMQ's default mode).

The command makes a fresh directory on a tmpfs (``/dev/shm``; the system's temporary directory
where there is none, said in the start line), serves it with ``--fsync never``, and removes it when
it stops: every message is lost at exit, and nothing is flushed on the way. It is refused with
``--root`` (the directory is the command's own) and on a listen address other than loopback
(another machine's clients would trust a queue that forgets), unless ``--allow-in-memory`` asks for
that. A ``spoolq serve`` killed with SIGKILL leaves its directory behind (``spoolq-in-memory-*``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: where an in-memory data directory is made: a tmpfs on Linux
SHM = Path("/dev/shm")
PREFIX = "spoolq-in-memory-"


class InMemoryRefused(Exception):
    """``--in-memory`` cannot be used as asked; the message says why (exit 2)."""


def check(*, root: Path | None, host: str | None, allowed: bool) -> None:
    """Refuse ``--in-memory`` with ``--root``, and on a non-loopback ``host`` unless ``allowed``."""
    from spoolq.access.auth import is_loopback

    if root is not None:
        raise InMemoryRefused("--in-memory makes its own data directory: leave out --root")
    if host is not None and not is_loopback(host) and not allowed:
        raise InMemoryRefused(f"--in-memory loses every message at exit and flushes nothing: refused on --host "
                              f"{host}, which other machines reach; add --allow-in-memory to serve it there")


def make_root() -> tuple[Path, bool]:
    """A fresh directory for the data, and whether it is in memory (on ``/dev/shm``)."""
    in_memory = SHM.is_dir() and os.access(SHM, os.W_OK)
    return Path(tempfile.mkdtemp(prefix=PREFIX, dir=str(SHM) if in_memory else None)), in_memory


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
