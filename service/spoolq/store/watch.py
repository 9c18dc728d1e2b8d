"""Long-poll wake-ups: inotify where available, a 50 ms re-poll elsewhere.

A waiting poller arms the queue's watches, reads the queue's *generation* (a per-process
counter bumped by every in-process send and every inotify event under the queue's ``ready/``
tree), polls, and then waits for the generation to move on. Arming and reading the generation
before polling means a message that lands between the poll and the wait, from this process or
another, is never missed.

One watcher thread per process serves every queue (inotify instances are a scarce,
per-user resource); it starts lazily on the first wait, after any fork. inotify sees
nothing done through another node of a shared file system, so waits are capped
(``rescan``) and the caller re-polls at least that often. Idle waiting uses no CPU.

An event-loop server (the Disque door) waits without a thread per waiter: it arms a queue
with :meth:`Watcher.watch` and registers a listener (:meth:`Watcher.add_listener`), which is
called with the queue path on every generation bump, from the thread that made it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

try:  # pragma: no cover - import guard
    import inotify_simple
except ImportError:  # pragma: no cover
    inotify_simple = None


#: without inotify, a waiting poller re-polls this often (seconds)
FALLBACK_STEP = 0.05


class Watcher:
    def __init__(self, rescan: float = 1.0) -> None:
        self.rescan = rescan
        #: the condition's own lock: :meth:`notify` (every send) takes it directly, not through the
        #: condition's ``__enter__``, a Python-level call
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._generation: dict[str, int] = {}
        self._wd_to_queue: dict[int, tuple[str, str]] = {}  # wd -> (queue dir, watched path)
        self._watched: dict[str, int] = {}  # path -> wd
        self._inotify: Any = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._failed = inotify_simple is None
        self._closed = False
        self._listeners: list[Callable[[str], None]] = []
        #: threads in :meth:`wait` now (changed under ``_cond``): a bump with none wakes nobody
        self._waiting = 0

    # -------------------------------------------------------------- public

    def generation(self, qpath: str) -> int:
        with self._cond:
            return self._generation.get(qpath, 0)

    def notify(self, qpath: str) -> None:
        with self._lock:
            self._generation[qpath] = self._generation.get(qpath, 0) + 1
            if self._waiting:
                self._cond.notify_all()
        if self._listeners:
            self._tell((qpath,))

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(qpath)`` after every generation bump (it must be quick and not raise)."""
        self._listeners.append(listener)

    def watch(self, qpath: str) -> bool:
        """Arm inotify for ``qpath`` (idempotent). False: no inotify here; re-poll every FALLBACK_STEP."""
        return self._arm(qpath)

    def watch_once(self, qpath: str) -> None:
        """:meth:`watch` unless ``qpath`` is armed in this process already (a dictionary lookup:
        the directories made since are added by the watcher thread as it sees them made)."""
        if os.getpid() != self._pid or os.path.join(qpath, "ready") not in self._watched:
            self._arm(qpath)

    def _tell(self, qpaths: tuple[str, ...] | set[str]) -> None:
        for listener in self._listeners:
            for qpath in qpaths:
                listener(qpath)

    def wait(self, qpath: str, seen: int, timeout: float) -> None:
        """Block until ``qpath``'s generation differs from ``seen`` or ``timeout`` passes."""
        if timeout <= 0:
            return
        if not self._arm(qpath):
            # no inotify (not Linux, or the per-user instance limit is reached): the caller
            # re-polls every FALLBACK_STEP, so a send elsewhere is seen within that time
            with self._cond:
                if self._generation.get(qpath, 0) == seen:
                    self._waiting += 1
                    try:
                        self._cond.wait(min(timeout, FALLBACK_STEP))
                    finally:
                        self._waiting -= 1
            return
        deadline = time.monotonic() + min(timeout, self.rescan)
        with self._cond:
            while self._generation.get(qpath, 0) == seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._waiting += 1
                try:
                    self._cond.wait(left)
                finally:
                    self._waiting -= 1

    def close(self) -> None:
        self._closed = True
        if self._inotify is not None:
            try:
                self._inotify.close()
            except OSError:
                pass

    # -------------------------------------------------------------- inotify

    def _arm(self, qpath: str) -> bool:
        if self._failed or self._closed:
            return False
        if os.getpid() != self._pid:  # forked after the watcher started: start afresh
            self._pid = os.getpid()
            self._inotify, self._thread = None, None
            self._wd_to_queue.clear()
            self._watched.clear()
        try:
            with self._cond:
                if self._inotify is None:
                    self._inotify = inotify_simple.INotify()
                    self._thread = threading.Thread(target=self._run, name="spoolq-watch", daemon=True)
                    self._thread.start()
                ready = os.path.join(qpath, "ready")
                self._add(qpath, ready)
                # the newest buckets: where sends land (ready/<ksec>/<bucket>, FIFO ready/<group>)
                for top in _sorted_entries(ready)[-32:]:
                    path = os.path.join(ready, top)
                    self._add(qpath, path)
                    if top.isdigit():
                        for b in _sorted_entries(path)[-16:]:
                            self._add(qpath, os.path.join(path, b))
            return True
        except OSError:
            self._failed = True
            return False

    def _add(self, qpath: str, path: str) -> None:
        if path in self._watched:
            return
        flags = inotify_simple.flags
        mask = flags.MOVED_TO | flags.CREATE | flags.CLOSE_WRITE
        try:
            wd = self._inotify.add_watch(path, mask)
        except FileNotFoundError:
            return
        self._watched[path] = wd
        self._wd_to_queue[wd] = (qpath, path)

    def _run(self) -> None:
        ino = self._inotify
        flags = inotify_simple.flags
        while not self._closed:
            try:
                events = ino.read(timeout=1000)
            except (OSError, ValueError):
                return
            if not events:
                continue
            touched: set[str] = set()
            with self._cond:
                for ev in events:
                    entry = self._wd_to_queue.get(ev.wd)
                    if entry is None:
                        continue
                    qpath, path = entry
                    if ev.mask & flags.IGNORED:
                        self._wd_to_queue.pop(ev.wd, None)
                        self._watched.pop(path, None)
                        continue
                    if ev.mask & flags.ISDIR and ev.name:
                        self._add(qpath, os.path.join(path, ev.name))
                    touched.add(qpath)
                for qpath in touched:
                    self._generation[qpath] = self._generation.get(qpath, 0) + 1
                if touched and self._waiting:
                    self._cond.notify_all()
            if touched:
                self._tell(touched)


def _sorted_entries(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []
