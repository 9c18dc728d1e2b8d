"""Whether the store can take the largest message now, and how close it is to not: the headroom.

``/readyz``, ``spoolq_store_writable`` and ``spoolq check-config`` judge the root's file system the
same way, from what :meth:`~spoolq.store.contract.QueueStore.health` reports (free bytes and
inodes as an unprivileged writer may use them, the file system's size and block, whether sends
write a commit journal):

* **what one send needs**: the largest message the service accepts (``max_body_bytes``: no
  message is larger than the request that carries it) as a file, with its metadata
  (:data:`MESSAGE_OVERHEAD`), rounded up to whole blocks; with ``--flush journal`` the same again
  for its journal record (which carries the message's bytes; an appended journal file grows by
  it); two blocks for directories (a new bucket). Inodes: the message file, a bucket directory,
  a journal file (:data:`INODES_PER_SEND`);
* **full** when the file system has less than that: ``/readyz`` answers ``503`` and
  ``spoolq_store_writable`` is 0, before a send of that size is refused (a smaller one may still
  fit: readiness is about the largest);
* **low** (a warning) when the free bytes are under ``low_space_percent`` of the file system's
  size, or the free inodes under ``low_inodes_percent`` of its inodes (one message is one
  inode): ``/readyz`` still answers ``200``, with ``"status": "warning"`` and the reason, and
  ``spoolq_store_space_low`` is 1;
* **ok** otherwise.

A file system without a fixed inode count (btrfs, CephFS) is judged on bytes alone.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spoolq.settings.server import Settings
from spoolq.store.filesystems import inode_counts
from spoolq.store.journal import journal_bytes, journal_limit

#: a message file's bytes besides its body: its header and metadata (attributes, ids, times)
MESSAGE_OVERHEAD = 4096
#: inodes a send may take: its file, a new bucket directory, a new journal file
INODES_PER_SEND = 3


class Headroom(enum.Enum):
    OK = "ok"
    LOW = "low"
    FULL = "full"


@dataclass(frozen=True)
class Limits:
    """What the headroom is judged against (the server's settings)."""

    largest_message: int  # bytes: ``max_body_bytes``
    low_space_percent: float
    low_inodes_percent: float


def limits_of(settings: Settings) -> Limits:
    return Limits(settings.max_body_bytes, settings.low_space_percent, settings.low_inodes_percent)


@dataclass(frozen=True)
class Verdict:
    headroom: Headroom
    reason: str  # "" when OK
    short_of: str  # what runs out: "bytes", "inodes" ("" when OK)
    need_bytes: int  # what one send of the largest message needs
    need_inodes: int


def _mib(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def root_health(root: Path, journal: bool) -> dict[str, Any]:
    """What :func:`judge` reads, from ``root``'s file system (as the store's ``health()`` reports
    it; for ``check-config`` and where the store's probe failed); raises ``OSError``."""
    st = os.statvfs(root)
    free_inodes, inodes = inode_counts(st)
    return {"free_bytes": st.f_bavail * st.f_frsize, "free_inodes": free_inodes, "inodes": inodes,
            "size_bytes": st.f_blocks * st.f_frsize, "block_bytes": st.f_frsize, "journal": journal,
            "journal_bytes": journal_bytes(root / "journal") if journal else 0,
            "journal_limit_bytes": journal_limit(root) if journal else 0}


def need_bytes(largest_message: int, block: int, journal: bool) -> int:
    """The bytes one send of ``largest_message`` may take (see the module doc)."""
    block = max(block, 512)
    file_bytes = -(-(largest_message + MESSAGE_OVERHEAD) // block) * block
    return file_bytes * (2 if journal else 1) + 2 * block


def judge(health: Mapping[str, Any], limits: Limits) -> Verdict:
    """The headroom of a store from its ``health()`` details (which must hold ``free_bytes``)."""
    free = int(health.get("free_bytes") or 0)
    size = int(health.get("size_bytes") or 0)
    free_inodes, inodes = health.get("free_inodes"), health.get("inodes")
    need = need_bytes(limits.largest_message, int(health.get("block_bytes") or 4096), bool(health.get("journal")))
    if not (isinstance(free_inodes, int) and isinstance(inodes, int) and inodes > 0):
        free_inodes = inodes = None  # no fixed inode count: judged on bytes alone
    largest = _mib(limits.largest_message)
    if free < need:
        return Verdict(Headroom.FULL, f"not enough space for a message of {largest} (the largest accepted): "
                       f"{_mib(free)} free, a send of it needs {_mib(need)}", "bytes", need, INODES_PER_SEND)
    if free_inodes is not None and free_inodes < INODES_PER_SEND:
        return Verdict(Headroom.FULL, f"no free inodes left for a message: {free_inodes} free of {inodes} "
                       f"(one per message)", "inodes", need, INODES_PER_SEND)
    if size and free * 100 < limits.low_space_percent * size:
        return Verdict(Headroom.LOW, f"{_mib(free)} free, under {limits.low_space_percent:g}% of the file "
                       f"system's {_mib(size)}", "bytes", need, INODES_PER_SEND)
    if free_inodes is not None and inodes is not None and free_inodes * 100 < limits.low_inodes_percent * inodes:
        return Verdict(Headroom.LOW, f"{free_inodes} free inodes of {inodes}, under "
                       f"{limits.low_inodes_percent:g}% (one per message)", "inodes", need, INODES_PER_SEND)
    return Verdict(Headroom.OK, "", "", need, INODES_PER_SEND)
