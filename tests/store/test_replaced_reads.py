"""Reading records that writers replace whole (queue settings, move status, topics) as a GlusterFS
mount answers while another mount renames a new version over one: ENOENT for a name that never
stopped naming a file. A read of a record the caller saw a moment ago looks again; a probe for a
record that is usually absent pays nothing more than one listing. (The same on real GlusterFS
mounts: ``tests/multinode/test_replaced_records.py``.)"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import FileStore, fileops
from spoolq.store.fileops import read_json, read_json_listed, stat_listed
from tests.inside import root_of


def _in_flight(monkeypatch: pytest.MonkeyPatch, name: str, times: int, call: str = "open",
               error: int = errno.ENOENT) -> list[str]:
    """``os.<call>`` of a path ending in ``name`` fails with ENOENT (or ``error``) ``times`` times, as
    a mount does while another renames over it; returns the paths it failed."""
    real: Callable[..., Any] = getattr(os, call)
    failed: list[str] = []

    def flaky(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith(name) and len(failed) < times:
            failed.append(str(path))
            raise OSError(error, os.strerror(error), str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fileops.os, call, flaky)
    return failed


def test_a_record_seen_a_moment_ago_is_read_again_after_enoent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "status.json"
    record.write_text(json.dumps({"state": "IN_PROGRESS"}))
    failed = _in_flight(monkeypatch, "status.json", 2)
    assert read_json(record) is None  # a probe: ENOENT is its answer
    assert read_json(record, present=True) == {"state": "IN_PROGRESS"}
    assert len(failed) == 2


def test_a_probe_reads_again_only_what_its_directory_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "topic.json"
    record.write_text(json.dumps({"name": "orders"}))
    _in_flight(monkeypatch, "topic.json", 1)
    assert read_json_listed(record) == {"name": "orders"}
    started = time.monotonic()
    assert read_json_listed(tmp_path / "absent.json") is None
    assert time.monotonic() - started < 0.04  # a true miss waits for nothing


def test_stat_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "meta.json"
    record.write_text("{}")
    failed = _in_flight(monkeypatch, "meta.json", 2, call="stat")
    assert stat_listed(str(record)).st_size == 2 and len(failed) == 2
    with pytest.raises(FileNotFoundError):
        stat_listed(str(tmp_path / "gone.json"))


def test_a_handle_stale_for_good_stays_a_storage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ESTALE that outlives the pauses is not taken for a missing record (a queue answered as gone)."""
    record = tmp_path / "meta.json"
    record.write_text("{}")
    _in_flight(monkeypatch, "meta.json", 100, call="stat", error=errno.ESTALE)
    with pytest.raises(OSError) as raised:
        stat_listed(str(record))
    assert raised.value.errno == errno.ESTALE


def test_a_queue_whose_settings_are_being_replaced_is_found(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.create_queue("orders")
    meta = root_of(store) / "queues" / "orders" / "meta.json"
    assert meta.exists()
    failed_stats = _in_flight(monkeypatch, "orders/meta.json", 1, call="stat")
    assert store.get_queue("orders").name == "orders"
    assert failed_stats
    store.update_queue("orders", tags={"team": "a"})  # a new meta.json: read whole again, not from the cache
    failed_opens = _in_flight(monkeypatch, "orders/meta.json", 1)
    assert store.get_queue("orders").tags == {"team": "a"}
    assert failed_opens
    assert "orders" in store.list_queues()
