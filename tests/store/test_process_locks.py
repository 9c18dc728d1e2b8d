"""A queue's record locks are the process's, whichever queue handle asks for them.

A process makes a second handle of a queue when its ``meta.json`` was missing for an instant (a
delete-if-empty moves the queue aside and back), while a thread may still be using the first.
POSIX record locks do not tell two threads of one process apart, so the in-process mutex in
front of them must be one per queue per process, and no descriptor of the lock file may be
closed while another thread holds a lock through it. Before the locks moved into process-wide
tables, each handle had its own mutexes and descriptor: two identical dedup sends through two
handles both passed the marker lock, and dropping the first handle released the second's locks
for every other process.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from spoolq.store import FileStore, QueueKind
from spoolq.store.handle import QueueHandle
from spoolq.store.markerlock import LOCK_FILE, stripe_of
from tests.inside import catalog_of


def _remade_handle(store: FileStore, name: str) -> QueueHandle:
    """Move the queue aside and back, as a delete-if-empty that found it not empty does, with a
    lookup in between: the process forgets its handle and makes a new one."""
    path = catalog_of(store).queue_path(name)
    os.rename(path, f"{path}.aside")
    assert catalog_of(store).find(name) is None
    os.rename(f"{path}.aside", path)
    handle = catalog_of(store).find(name)
    assert handle is not None
    return handle


def _waits_for(first: AbstractContextManager[None], second: Callable[[], AbstractContextManager[None]]) -> bool:
    """Whether a thread entering ``second()`` waits while this thread is inside ``first``."""
    entered = threading.Event()

    def enter() -> None:
        with second():
            entered.set()

    with first:
        t = threading.Thread(target=enter, daemon=True)
        t.start()
        waited = not entered.wait(0.5)
    t.join(timeout=10)
    assert entered.is_set(), "the second thread never got the lock"
    return waited


def _other_process_can_lock(path: str, offset: int, length: int) -> bool:
    script = ("import fcntl, os, sys\n"
              "fd = os.open(sys.argv[1], os.O_RDWR)\n"
              "try:\n"
              "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, int(sys.argv[3]), int(sys.argv[2]))\n"
              "except OSError:\n"
              "    print('refused')\n"
              "else:\n"
              "    print('taken')\n")
    done = subprocess.run([sys.executable, "-c", script, path, str(offset), str(length)], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip() == "taken"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[FileStore]:
    s = FileStore(tmp_path / "root", node_id="t", fsync=False)
    yield s
    s.close()


def test_two_handles_of_a_dedup_queue_share_its_marker_locks(store: FileStore) -> None:
    store.create_queue("d", QueueKind.DEDUP)
    first = catalog_of(store).require("d")
    marker = first.dedup_marker(b"same body")
    with first.hold_marker_locks([marker]):  # the first handle has been used: its descriptor is open
        pass
    second = _remade_handle(store, "d")
    assert second is not first
    assert _waits_for(first.hold_marker_locks([marker]), lambda: second.hold_marker_locks([marker]))
    assert _waits_for(second.hold_marker_locks([marker]), lambda: first.hold_marker_locks([marker]))


def test_a_dropped_handle_does_not_release_the_locks_another_holds(store: FileStore) -> None:
    store.create_queue("d", QueueKind.DEDUP)
    first = catalog_of(store).require("d")
    marker = first.dedup_marker(b"same body")
    with first.hold_marker_locks([marker]):
        pass
    second = _remade_handle(store, "d")
    lock_file = f"{second.path}/{LOCK_FILE}"
    with second.hold_marker_locks([marker]):
        assert not _other_process_can_lock(lock_file, stripe_of(marker), 1)
        del first
        gc.collect()
        assert catalog_of(store).find("d") is second
        _remade_handle(store, "d")  # and the process forgets the queue once more meanwhile
        gc.collect()
        assert not _other_process_can_lock(lock_file, stripe_of(marker), 1)
    assert _other_process_can_lock(lock_file, stripe_of(marker), 1)


@pytest.mark.parametrize("lock", ["fifo", "settings"])
def test_two_handles_of_a_queue_share_its_whole_file_locks(store: FileStore, lock: str) -> None:
    store.create_queue("f.fifo", QueueKind.FIFO)
    first = catalog_of(store).require("f.fifo")

    def locking(handle: QueueHandle) -> AbstractContextManager[None]:
        if lock == "fifo":
            return handle.fifo_lock()
        return catalog_of(store)._settings_lock(handle)  # the lock a settings change holds

    with locking(first):
        pass
    second = _remade_handle(store, "f.fifo")
    assert second is not first
    assert _waits_for(locking(first), lambda: locking(second))
    lock_file = f"{second.path}/{'lock' if lock == 'fifo' else 'settings.lock'}"
    with locking(second):
        assert not _other_process_can_lock(lock_file, 0, 0)
    assert _other_process_can_lock(lock_file, 0, 0)


def test_a_forked_child_waits_for_its_parents_hold_and_then_takes_the_lock(store: FileStore) -> None:
    """A child forked while its parent holds a marker lock has none of the parent's threads: it
    must not wait on a mutex copied in the held state, but on the record lock, like any process."""
    store.create_queue("d", QueueKind.DEDUP)
    q = catalog_of(store).require("d")
    marker = q.dedup_marker(b"body")
    read_end, write_end = os.pipe()
    with q.hold_marker_locks([marker]):
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            with contextlib.suppress(BaseException):
                os.close(read_end)
                with q.hold_marker_locks([marker]):
                    os.write(write_end, b"got")
                code = 0
            os._exit(code)
        os.close(write_end)
        ready, _, _ = select.select([read_end], [], [], 0.5)
        assert not ready, "the child took a lock its parent holds"
    try:
        ready, _, _ = select.select([read_end], [], [], 10)
        assert ready and os.read(read_end, 3) == b"got", "the child never got the lock"
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.close(read_end)
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            os.kill(pid, 9)
            os.waitpid(pid, 0)
