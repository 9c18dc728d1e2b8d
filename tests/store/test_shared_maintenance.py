"""Background maintenance is shared by every process on a root: one pass per queue per interval.

Two FileStores on one root stand for two processes (or nodes). A background pass stamps the queue
directory's mtime; another process's background pass within the interval skips that queue, and
does it once the interval is over. An explicit ``maintain()`` (no interval) always does the work.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from spoolq.store import FileStore, OutgoingMessage


class Clock:
    def __init__(self) -> None:
        self.now = time.time() + 100  # ahead of the real mtimes that creating directories leaves

    def __call__(self) -> float:
        return self.now


def test_a_queue_is_maintained_once_per_interval_across_processes(tmp_path: Path) -> None:
    clock = Clock()
    a = FileStore(tmp_path, node_id="a", fsync=False, clock=clock)
    b = FileStore(tmp_path, node_id="b", fsync=False, clock=clock)
    a.create_queue("q")
    a.send_batch("q", [OutgoingMessage(body=b"x")])
    [_d] = a.poll("q", claim_ttl=1)
    start = clock.now
    clock.now = start + 2  # the claim has expired

    assert a.maintain(shared_interval=5).get("claims_expired", 0) == 1
    assert os.stat(tmp_path / "queues" / "q").st_mtime == pytest.approx(clock.now, abs=0.01)  # stamped with the store clock
    [_d] = b.poll("q", claim_ttl=1)  # claimed again (and polled through b: b's cache knows the queue)
    clock.now = start + 4
    assert b.maintain(shared_interval=5).get("claims_expired", 0) == 0  # a did it 2 s ago: b's turn is not due
    clock.now = start + 8
    assert b.maintain(shared_interval=5).get("claims_expired", 0) == 1  # 6 s later: due again
    [_d] = a.poll("q", claim_ttl=1)
    clock.now = start + 10
    assert a.maintain().get("claims_expired", 0) == 1  # an explicit pass always works
    a.close()
    b.close()


def test_a_deleted_queue_is_skipped_not_an_error(tmp_path: Path) -> None:
    a = FileStore(tmp_path, node_id="a", fsync=False)
    b = FileStore(tmp_path, node_id="b", fsync=False)
    a.create_queue("gone")
    b.list_queues()
    a.delete_queue("gone")
    b.maintain(shared_interval=1.0)
    a.close()
    b.close()
