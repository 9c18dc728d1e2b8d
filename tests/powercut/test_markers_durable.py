"""Dedup markers and the FIFO deduplication window survive a power cut in every flush mode.

Found by the power-cut cycles: with ``--flush fsync`` a marker's data and its directory entry were
never flushed (only the message files and their directories were), so after a power cut the FIFO
window was forgotten (an acknowledged send retried with the same deduplication id was accepted a
second time) and a pending dedup copy stopped absorbing identical sends.
"""

from __future__ import annotations

import pytest

from spoolq.store import FileStore, OutgoingMessage, QueueKind
from tests.powercut.crashdisk import CrashDisk

pytestmark = pytest.mark.powercut


@pytest.mark.parametrize("flush", ["syncfs", "journal", "fsync"])
def test_markers_survive_a_cut(crash_disk: CrashDisk, flush: str) -> None:
    root = crash_disk.mountpoint / "root"
    store = FileStore(root, node_id="markers", flush=flush)
    store.create_queue("jobs.fifo", QueueKind.FIFO)
    store.create_queue("dd", QueueKind.DEDUP)
    fifo = [store.send("jobs.fifo", OutgoingMessage(b"job %d" % i, group_id=f"g{i % 3}", dedup_id=f"d{i}"))
            for i in range(30)]
    dedup = [store.send("dd", OutgoingMessage(b"same %d" % i)) for i in range(30)]
    store.close()

    crash_disk.cut()
    assert crash_disk.reboot_checked() == ""

    store = FileStore(root, node_id="markers", flush=flush)
    try:
        again = [store.send("jobs.fifo", OutgoingMessage(b"retry %d" % i, group_id=f"g{i % 3}", dedup_id=f"d{i}"))
                 for i in range(30)]
        assert [r.duplicate for r in again] == [True] * 30, "the FIFO deduplication window was forgotten"
        assert [r.id for r in again] == [r.id for r in fifo]
        collapsed = [store.send("dd", OutgoingMessage(b"same %d" % i)) for i in range(30)]
        assert [r.duplicate for r in collapsed] == [True] * 30, "a pending dedup copy no longer absorbs sends"
        assert [r.id for r in collapsed] == [r.id for r in dedup]
    finally:
        store.close()
