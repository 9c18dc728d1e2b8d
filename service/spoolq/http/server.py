"""Serving the app with gunicorn, started programmatically (``spoolq serve``).

Worker model: ``gthread`` workers (``settings.workers`` processes x ``settings.threads``
threads). A long poll (``wait`` up to 20 s) holds one thread, not a process, so with the
defaults (4 x 32) up to 128 requests are in flight and long polls cannot starve short
requests until well over 100 of them wait at once; sync workers would block a whole
process per long poll. A worker stops accepting connections while all its threads are busy
(:class:`SpoolqThreadWorker`), so a new request is never queued inside a worker whose
threads are all held by long polls; it waits in the listen backlog until any worker has a
free thread. gunicorn's
``timeout`` (the worker heartbeat, 120 s) is far above the 20 s long-poll ceiling;
keep-alive is 5 s so idle connections do not hold a worker's slots for long.

The same options are used by ``deploy/gunicorn.conf.py`` for running gunicorn directly.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from gunicorn import util as gunicorn_util
from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from spoolq.settings import Settings

#: Access log without the query string (it may carry ``APIKey``).
ACCESS_LOG_FORMAT = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def _write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's answer to a request it cannot parse (414, 431, 400), as JSON instead of HTML."""
    body = json.dumps({"message": f"HTTP {status_int} {reason}" + (f": {mesg}" if mesg else "")}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    gunicorn_util.write_nonblock(sock, head + body)


class SpoolqThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker with two changes.

    * It stops accepting new connections while every thread is busy (long polls hold threads
      for up to 20 s), so a new request waits in the listen backlog for any worker with a free
      thread instead of queueing behind long polls inside this one. (Plain gthread only limits
      the number of connections, idle keep-alive ones included.)
    * Protocol errors gunicorn answers itself (a request line over 8190 bytes, oversized
      headers, malformed requests) get a JSON body, never HTML.
    """

    _busy = 0

    def init_process(self) -> None:
        gunicorn_util.write_error = _write_json_error  # this worker process only
        super().init_process()

    # enqueue_req, finish_request and set_accept_enabled all run on the worker's main thread.
    def enqueue_req(self, conn: Any) -> None:
        self._busy += 1
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fs: Any) -> None:
        self._busy -= 1
        super().finish_request(conn, fs)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled and self._busy < self.cfg.threads)

    def accept(self, listener: Any) -> None:
        if self._busy >= self.cfg.threads:
            self.set_accept_enabled(False)  # the run loop re-enables it once a thread is free
            return
        super().accept(listener)


def _worker_hooks_present() -> bool:
    """Whether this gunicorn's gthread worker has the methods SpoolqThreadWorker extends."""
    return all(callable(getattr(ThreadWorker, m, None))
               for m in ("enqueue_req", "finish_request", "accept", "set_accept_enabled"))


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn hook: drop a dead worker's live gauges from the multiprocess metrics."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def gunicorn_options(settings: Settings, *, access_log: bool = False) -> dict[str, Any]:
    return {
        "bind": [f"[{settings.host}]:{settings.port}" if ":" in settings.host else f"{settings.host}:{settings.port}"],
        "workers": settings.workers,
        "threads": settings.threads,
        "worker_class": "spoolq.http.server.SpoolqThreadWorker" if _worker_hooks_present() else "gthread",
        "timeout": 120,
        "graceful_timeout": 30,
        "keepalive": 5,
        # gthread keeps up to worker_connections - threads idle keep-alive connections
        "worker_connections": settings.threads * 4,
        "preload_app": False,  # the app (and the store) is built in each worker, after the fork
        "accesslog": "-" if access_log else None,
        "access_log_format": ACCESS_LOG_FORMAT,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "spoolq",
        "child_exit": child_exit,
        "limit_request_line": 8190,
        "control_socket_disable": True,  # several servers (tests, nodes) may run as one user
    }


class SpoolqApplication(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self.settings = settings
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        from spoolq.http.app import create_app

        return create_app(self.settings)


def prepare_metrics_dir() -> str | None:
    """Put prometheus-client in multiprocess mode (before anything imports it); returns a dir to remove."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    # On tmpfs when there is one: the metric files are mmap'd and dirtied on every request, and
    # on the data directory's file system each durable send's syncfs would write them back too.
    shm = "/dev/shm"
    path = tempfile.mkdtemp(prefix="spoolq-metrics-", dir=shm if os.access(shm, os.W_OK) else None)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    return path


def serve(settings: Settings, *, access_log: bool = False) -> None:
    """Run gunicorn in the foreground until it is stopped."""
    created = prepare_metrics_dir()
    try:
        SpoolqApplication(settings, gunicorn_options(settings, access_log=access_log)).run()
    finally:
        if created:
            shutil.rmtree(created, ignore_errors=True)
