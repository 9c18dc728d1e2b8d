"""The Disque listener as a child process of ``spoolq serve``: started, watched, stopped.

``spoolq serve --disque-port N`` (and/or ``--disque-tls-port M``) binds the sockets in the parent (:func:`bind`; errors surface
there) and :class:`Supervisor` starts ``python -m spoolq.disque.server --fd F --parent P`` with
those sockets inherited and the service's settings in ``SPOOLQ_DISQUE_SETTINGS`` (JSON,
:func:`settings_to_json`). The child dies with its parent (``PR_SET_PDEATHSIG``,
:func:`die_with_parent`) and the supervisor starts it again if it dies alone: the parent keeps
the socket, so clients only see their connections drop. A stop is SIGTERM, which the listener
answers with a graceful drain of up to :data:`GRACEFUL_SECONDS`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import fields
from pathlib import Path
from typing import Any

from spoolq.settings.server import PATH_FIELDS, Settings

log = logging.getLogger("spoolq.disque")
#: how long a stopping listener lets commands already read finish
GRACEFUL_SECONDS = 25.0


def settings_to_json(settings: Settings) -> str:
    return json.dumps({f.name: (str(v) if isinstance(v := getattr(settings, f.name), Path) else v)
                       for f in fields(Settings)})


def settings_from_json(text: str) -> Settings:
    data = json.loads(text)
    for key in PATH_FIELDS:
        if data.get(key) is not None:
            data[key] = Path(data[key])
    return Settings(**data)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(1024)
    return sock


def die_with_parent() -> None:
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Supervisor:
    """Runs the listener child next to gunicorn and starts it again if it dies.

    The parent keeps the bound socket, so a restarted child serves the same port and clients
    only see their connections drop. (gunicorn's arbiter reaps every child of the master, so
    the child is watched by pid, not by ``wait``.)
    """

    def __init__(self, settings: Settings, sock: socket.socket | None = None,
                 tls_sock: socket.socket | None = None) -> None:
        self.settings = settings
        # errors surface now, in the parent
        if sock is None and tls_sock is None:
            sock = bind(settings.disque_host, settings.disque_port)
        self.sock = sock  # clear text
        self.tls_sock = tls_sock
        self.proc: Any = None
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="spoolq-disque-supervisor", daemon=True)

    def start(self) -> Supervisor:
        self._spawn()
        self._thread.start()
        return self

    def _spawn(self) -> None:
        env = dict(os.environ, SPOOLQ_DISQUE_SETTINGS=settings_to_json(self.settings))
        args, fds = [], []
        for flag, sock in (("--fd", self.sock), ("--tls-fd", self.tls_sock)):
            if sock is not None:
                args += [flag, str(sock.fileno())]
                fds.append(sock.fileno())
        self.proc = subprocess.Popen([sys.executable, "-m", "spoolq.disque.server", *args,
                                      "--parent", str(os.getpid())], pass_fds=fds, env=env)

    def _alive(self) -> bool:
        if self.proc.poll() is not None:
            return False
        try:
            os.kill(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _watch(self) -> None:
        while not self._stop.wait(1.0):
            if not self._alive() and not self._stop.is_set():
                log.warning("disque: the listener process exited; starting it again")
                self.restarts += 1
                self._forget(self.proc.pid)
                self._spawn()

    @staticmethod
    def _forget(pid: int) -> None:
        """Drop a dead listener's live gauges (its blocked GETJOBs) from the multiprocess metrics;
        its counters stay, as a dead gunicorn worker's do."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]

    def stop(self) -> None:
        """Stop the listener gracefully (SIGTERM: see :func:`run`) and close this copy of the socket."""
        self._stop.set()
        if self.proc is not None and self._alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=GRACEFUL_SECONDS + 5)
            except Exception:
                self.proc.kill()
            self._forget(self.proc.pid)
        for sock in (self.sock, self.tls_sock):
            if sock is not None:
                sock.close()
