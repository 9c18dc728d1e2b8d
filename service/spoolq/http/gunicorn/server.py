"""Serving the app with gunicorn, started programmatically (``spoolq serve``).

Worker model: ``gthread`` workers (``settings.workers`` processes x ``settings.threads``
threads), with spoolq's subclass :class:`~spoolq.http.gunicorn.worker.SpoolqThreadWorker`. A thread
serves one request at a time; a *long poll* (``wait`` up to 20 s) holds a thread only while it
actually polls: when it finds nothing, the worker parks the connection (no thread) in a
waiting set keyed by queue and re-runs the request when the queue changes (the store's
watcher: in-process sends and inotify), at least once a second per queue (changes made
through other nodes), and sends the empty answer itself at the deadline. So thousands of
long polls wait per worker while short requests keep every thread (see the worker's
docstring and :mod:`spoolq.http.gunicorn.parking`). A worker stops accepting connections while all
its threads are busy, so a new request is never queued inside a worker whose threads are
all taken; it waits in the listen backlog until any worker has a free thread. gunicorn's
``timeout`` (the worker heartbeat, 120 s) is far above the 20 s long-poll ceiling;
keep-alive is 5 s. A connection holds no thread until its request has arrived: the worker's
loop reads heads (and bodies of declared length) under ``header_timeout`` and holds at most
``max_connections`` connections
(:mod:`spoolq.http.gunicorn.heads`). ``serve`` raises the soft open-file limit to the hard one (each
waiting poll is a socket).

A reload (``SIGHUP``) checks the config first and changes nothing when it has a mistake; it
stops the old workers only once every new one has built the app, and keeps them when a new one
fails to boot (:mod:`spoolq.http.gunicorn.arbiter`), so the port always has a worker that accepts.

The same options are used by ``deploy/gunicorn.conf.py`` for running gunicorn directly.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from spoolq.access.tls import gunicorn_tls_options
from spoolq.config.check import ConfigCheck
from spoolq.http.gunicorn.arbiter import report_boot_failure, report_ready
from spoolq.http.gunicorn.reload_state import ReloadState
from spoolq.settings.server import Settings

__all__ = ["AppFactory", "gunicorn_options", "raise_open_file_limit", "remove_metrics_dir", "serve"]

#: set by :func:`prepare_metrics_dir` to the directory it made (inherited by a SIGUSR2 re-exec)
METRICS_DIR_MADE_ENV = "SPOOLQ_METRICS_DIR_MADE"

#: builds the WSGI app in each worker, after the fork (``spoolq serve``: :func:`spoolq.http.app.create_app`)
AppFactory = Callable[[Settings], Any]

#: Access log without the query string (it may carry ``APIKey``).
ACCESS_LOG_FORMAT = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def _worker_hooks_present() -> bool:
    """Whether this gunicorn's gthread worker has the methods SpoolqThreadWorker extends."""
    return all(callable(getattr(ThreadWorker, m, None))
               for m in ("enqueue_req", "finish_request", "accept", "set_accept_enabled", "handle_request",
                         "handle", "wait_for_and_dispatch_events"))


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
        "worker_class": "spoolq.http.gunicorn.worker.SpoolqThreadWorker" if _worker_hooks_present() else "gthread",
        "timeout": 120,
        "graceful_timeout": 30,
        "keepalive": 5,
        # the connections one worker holds open (spoolq.http.gunicorn.heads; parked long polls included)
        "worker_connections": settings.max_connections,
        "preload_app": False,  # the app (and the store) is built in each worker, after the fork
        "accesslog": "-" if access_log else None,
        "access_log_format": ACCESS_LOG_FORMAT,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "spoolq",
        "child_exit": child_exit,
        "post_worker_init": report_ready,  # a reload stops the old workers once the new ones serve
        "on_exit": on_exit,
        # gunicorn takes 0-8190 (0: no limit); spoolq's worker bounds request lines at 4 MiB itself
        # (spoolq.http.gunicorn.request_line: a 1 MiB SQS message by GET), with gunicorn's Python parser
        "limit_request_line": 0 if _worker_hooks_present() else 8190,
        "http_parser": "python",
        "control_socket_disable": True,  # several servers (tests, nodes) may run as one user
        **gunicorn_tls_options(settings),  # with a certificate: HTTPS only (spoolq.access.tls)
    }


#: the metrics directory to remove once the master has stopped everything it started
_metrics_dir_to_remove: list[str] = []


def on_exit(arbiter: Any) -> None:
    """gunicorn hook (master, at its end): the metrics directory ``spoolq serve`` made is to be
    removed, unless another generation of the service still uses it (a SIGUSR2 re-exec: the new
    master while the old one runs, or the old one while the new one runs). It is removed by
    :func:`remove_metrics_dir`, after the Disque listener, which writes there too, has stopped."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path and os.environ.get(METRICS_DIR_MADE_ENV) == path and not arbiter.reexec_pid and not arbiter.master_pid:
        _metrics_dir_to_remove.append(path)


def on_reload(arbiter: Any) -> None:
    """gunicorn hook for plain gunicorn (``deploy/gunicorn.conf.py``; master, on SIGHUP, before the
    new workers start): apply the config file's declared queues and topics again
    (:mod:`spoolq.config.declared_queues`, :mod:`spoolq.config.declared_topics`). ``spoolq serve``'s master does it
    itself, once the new workers serve."""
    from spoolq.config.declared_queues import apply_from_settings
    from spoolq.config.declared_topics import apply_topics_from_settings
    from spoolq.settings.server import load_settings

    settings = load_settings()
    apply_from_settings(settings, arbiter.log.info, arbiter.log.error)
    apply_topics_from_settings(settings, arbiter.log.info, arbiter.log.error)


def remove_metrics_dir() -> None:
    """Remove the metrics directory if :func:`on_exit` found it due."""
    while _metrics_dir_to_remove:
        shutil.rmtree(_metrics_dir_to_remove.pop(), ignore_errors=True)


class SpoolqApplication(BaseApplication):  # type: ignore[misc]
    """gunicorn's application for ``spoolq serve``: the app factory, spoolq's options, and (when
    given) an HTTP listener opened before gunicorn starts (:mod:`spoolq.cli.listen_sockets`)."""

    def __init__(self, settings: Settings, options: dict[str, Any], create_app: AppFactory,
                 listener_fd: int | None = None, accepted: ConfigCheck | None = None,
                 reload_state: ReloadState | None = None, listeners_kept_elsewhere: bool = False,
                 on_final_stop: Callable[[], None] | None = None) -> None:
        self.settings = settings
        #: systemd keeps the listener open across stops (a stop does not gate it: the next start serves it)
        self.listeners_kept_elsewhere = listeners_kept_elsewhere
        #: called when a graceful stop gated the listener (no other process keeps it)
        self.on_final_stop = on_final_stop
        self.create_app = create_app
        self.options = options
        self.listener_fd = listener_fd
        #: the config check ``spoolq serve`` started with, and its outcome (None: made by the arbiter)
        self.accepted = accepted
        self.reload_state = reload_state
        super().__init__()

    def run(self) -> None:
        from gunicorn import sock as gunicorn_sock

        from spoolq.http.gunicorn.arbiter import HandoverArbiter

        arbiter = HandoverArbiter(self)
        # a SIGUSR2 re-exec runs this command again, as a module (not the script path, whose
        # directory would shadow the standard library's ``http``)
        arbiter.START_CTX["args"] = [sys.executable, "-m", "spoolq.cli", *sys.argv[1:]]
        if self.listener_fd is not None:
            arbiter.LISTENERS = gunicorn_sock.create_sockets(self.cfg, arbiter.log, [self.listener_fd])
        arbiter.run()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        try:
            return self.create_app(self.settings)
        except Exception as e:  # the worker fails to boot: the master says why (spoolq.http.gunicorn.arbiter)
            report_boot_failure(e)
            raise


def prepare_metrics_dir() -> str | None:
    """Put prometheus-client in multiprocess mode (before anything imports it); returns the
    directory when made here (the last master to exit removes it: :func:`on_exit`)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    # On tmpfs when there is one: the metric files are mmap'd and dirtied on every request, and
    # on the data directory's file system each durable send's syncfs would write them back too.
    shm = "/dev/shm"
    path = tempfile.mkdtemp(prefix="spoolq-metrics-", dir=shm if os.access(shm, os.W_OK) else None)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    os.environ[METRICS_DIR_MADE_ENV] = path
    return path


def raise_open_file_limit() -> None:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit (capped at 1M): parked polls are sockets."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard if hard != resource.RLIM_INFINITY else 1 << 20, 1 << 20)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


def serve(settings: Settings, accepted: ConfigCheck | None = None, reload_state: ReloadState | None = None, *,
          create_app: AppFactory, access_log: bool = False, listener_fd: int | None = None,
          listeners_kept_elsewhere: bool = False, on_final_stop: Callable[[], None] | None = None) -> None:
    """Run gunicorn in the foreground until it is stopped (on ``listener_fd`` when given), each
    worker serving the app ``create_app`` builds, with the config check it started with
    (``accepted``) and its outcome (``listeners_kept_elsewhere``: systemd passed the listener and
    keeps it; ``on_final_stop``: called when a graceful stop found no other process keeping the
    listener, :mod:`spoolq.access.listener_gate`). The caller stops what else it started, then calls
    :func:`remove_metrics_dir` (master only)."""
    raise_open_file_limit()
    prepare_metrics_dir()
    SpoolqApplication(settings, gunicorn_options(settings, access_log=access_log), create_app, listener_fd,
                      accepted, reload_state, listeners_kept_elsewhere, on_final_stop).run()
