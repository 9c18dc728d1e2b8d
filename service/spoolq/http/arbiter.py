"""gunicorn's master, with a reload that hands over: old workers stop once the new ones serve.

gunicorn's own reload (``SIGHUP``) forks the new workers and sends the old ones ``SIGTERM`` at
once. An old worker stops accepting at that moment, while a new one accepts only once it has
imported and built the app (``preload_app`` is off: each worker builds its own store after the
fork, and a reload is how new code is loaded). For that whole boot time nobody accepts: every
request that arrives waits in the listen backlog. On an idle machine that is about half a second;
on one whose cores are busy it is several seconds, and a client that gives up after 10 s finds
its send stored but never answered (the request still sits in the backlog, complete, and the new
worker serves it after the client has gone).

:class:`HandoverArbiter` waits, inside the reload, until every new worker reports that it has
built the app (:func:`report_ready`, gunicorn's ``post_worker_init`` hook, writes its pid to a
pipe the master reads), and only then stops the old ones. Meanwhile the old workers serve as
before, so a reload never leaves the socket without a worker that accepts. If the new workers
have not reported within gunicorn's worker ``timeout``, the old ones are stopped anyway (as
gunicorn would); a new worker that fails to boot halts the service, as in gunicorn.
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import time
from typing import Any

from gunicorn.arbiter import Arbiter

#: the pipe's write end, in the master and in every worker it forks (-1: no handover master)
_ready_fd = -1
_PID = struct.Struct("=i")


def report_ready(worker: Any) -> None:
    """gunicorn hook ``post_worker_init`` (in a worker, once its app is built): tell the master."""
    if _ready_fd >= 0:
        with contextlib.suppress(OSError):
            os.write(_ready_fd, _PID.pack(os.getpid()))  # 4 bytes: one atomic pipe write


class HandoverArbiter(Arbiter):  # type: ignore[misc]
    def __init__(self, app: Any) -> None:
        global _ready_fd
        super().__init__(app)
        self._ready_read, _ready_fd = os.pipe()  # close-on-exec: a re-exec makes its own
        os.set_blocking(self._ready_read, False)
        self._ready: set[int] = set()
        self._handover_after: int | None = None  # during a reload: the age of the last old worker

    def reload(self) -> None:
        self._handover_after = self.worker_age
        try:
            super().reload()  # forks the new workers, then calls manage_workers (below)
        finally:
            self._handover_after = None

    def manage_workers(self) -> None:
        if self._handover_after is not None:
            last_old, self._handover_after = self._handover_after, None
            self._await_new_workers(last_old)
        super().manage_workers()  # stops the oldest workers beyond the configured number

    def _await_new_workers(self, last_old: int) -> None:
        """Block until every worker younger than ``last_old`` has reported ready (or died, or
        gunicorn's worker timeout passed)."""
        deadline = time.monotonic() + max(float(self.timeout or 0), 30.0)
        while time.monotonic() < deadline:
            self._read_reports()
            self.reap_workers()  # a new worker that fails to boot halts the service, as in gunicorn
            waiting = [pid for pid, w in self.WORKERS.items() if w.age > last_old and pid not in self._ready]
            if not waiting:
                return
            select.select([self._ready_read], [], [], 0.1)
        self.log.warning("new workers did not report ready in time; stopping the old ones anyway")

    def _read_reports(self) -> None:
        while True:
            try:
                data = os.read(self._ready_read, _PID.size * 256)
            except BlockingIOError:
                break
            if not data:
                break
            for (pid,) in _PID.iter_unpack(data[: len(data) - len(data) % _PID.size]):
                self._ready.add(pid)
        self._ready &= set(self.WORKERS)
