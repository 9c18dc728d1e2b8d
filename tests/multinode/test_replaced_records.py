"""Records that writers replace whole, read through another mount of one GlusterFS volume while a
node replaces them: a queue's settings (``meta.json``) and the list of queues. A GlusterFS mount
answers ENOENT now and then for a name another mount is renaming a new version over, though the
name never stops naming a file on any brick; the store must not take that for a missing queue (a
send, a poll or a move status through the other node would be answered "no such queue")."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from spoolq.store import FileStore
from tests.multinode.cluster import mount_path

pytestmark = pytest.mark.multinode

SECONDS = 12.0


@pytest.mark.parametrize("volume", ["spq-rep", "spq-dist"])
def test_a_queue_whose_settings_change_on_one_node_is_always_there_on_another(gluster: Path, volume: str) -> None:
    name = f"replaced-{uuid.uuid4().hex[:8]}"
    writer = FileStore(mount_path(volume, 1) / name, node_id="writer", flush="fsync")
    reader = FileStore(mount_path(volume, 2) / name, node_id="reader", flush="fsync")
    try:
        writer.create_queue("settings")
        reader.get_queue("settings")
        stop = time.monotonic() + SECONDS
        changes, looks, missing = 0, 0, []

        def change() -> None:
            nonlocal changes
            while time.monotonic() < stop:
                ttl = 30.0 + changes % 2
                writer.change_queue("settings", lambda q, ttl=ttl: replace(q, config=replace(q.config, claim_ttl=ttl)))
                changes += 1

        def look() -> None:
            nonlocal looks
            while time.monotonic() < stop:
                looks += 1
                try:
                    reader.get_queue("settings")
                except Exception as e:  # every failure is what this test counts
                    missing.append(f"get_queue: {e!r}")
                if "settings" not in reader.list_queues():
                    missing.append("list_queues")

        threads = [threading.Thread(target=change), *(threading.Thread(target=look) for _ in range(2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"{volume}: {changes} changes on one mount, {looks} looks on another, {len(missing)} missing")
        assert changes > 50 and looks > 200
        assert missing == [], missing[:5]
    finally:
        writer.close()
        reader.close()
