"""The listening sockets of ``spoolq serve``, and how they outlive a restart or an upgrade.

A client that connects while no process listens gets "connection refused", which most clients
report as an error. So the sockets are opened once and handed on, never closed between two
generations of the service. ``serve`` takes them from the first of:

1. **systemd socket activation** (``LISTEN_PID`` is this process, ``LISTEN_FDS`` sockets from fd 3,
   ``LISTEN_FDNAMES``): the socket named ``http`` (or the first) serves HTTP, the one named
   ``disque`` (or the second) Disque, the one named ``disque-tls`` Disque over TLS. systemd keeps them open across ``systemctl restart``, so
   connections made while the service restarts wait in the kernel's backlog and are served by the
   new process (``deploy/spoolq-http.socket``, ``deploy/spoolq-disque.socket``).
2. **a re-exec by SIGUSR2** (gunicorn's upgrade): the old master passes its HTTP listener in
   ``GUNICORN_FD`` and the Disque listeners in ``SPOOLQ_DISQUE_FD`` and ``SPOOLQ_DISQUE_TLS_FD``; the new master, running the
   code now on disk, serves them next to the old one until the old one is stopped.
3. **bound here**, after the checks `check-config` makes and before anything is started or
   printed, so a busy port fails at once with its reason.

The listen address in the settings is replaced by the inherited socket's own address (the
listen policy and the banner use it). ``LISTEN_*`` variables are removed from the environment,
so no child takes them for its own.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import MutableMapping
from dataclasses import dataclass

from spoolq.access.listener_gate import admit_new_handshakes
from spoolq.settings.server import Settings, SettingsError

#: the first file descriptor systemd passes
SD_LISTEN_FDS_START = 3
#: environment variable that carries the Disque listener across a SIGUSR2 re-exec
DISQUE_FD_ENV = "SPOOLQ_DISQUE_FD"
#: the same for the Disque TLS listener (``--disque-tls-port``)
DISQUE_TLS_FD_ENV = "SPOOLQ_DISQUE_TLS_FD"
#: set when systemd passed the sockets, so that a SIGUSR2 re-exec knows systemd keeps them too
KEPT_BY_SYSTEMD_ENV = "SPOOLQ_LISTENERS_KEPT_BY_SYSTEMD"
#: listen backlog of sockets bound here: connections made while the workers are busy (or while
#: a new generation starts) wait in it
BACKLOG = 2048


@dataclass
class ListenSockets:
    """The listening TCP sockets ``serve`` hands to gunicorn (HTTP) and to the Disque door (or none)."""

    http: socket.socket
    disque: socket.socket | None
    source: str  # "systemd", "re-exec" or "bound"
    disque_tls: socket.socket | None = None  # Disque over TLS (spoolq.access.tls)
    #: systemd keeps them open across stops (passed by it, or by a re-exec of a master it started)
    kept_by_systemd: bool = False

    def close(self) -> None:
        for sock in (self.http, self.disque, self.disque_tls):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()


def inherited_sockets(settings: Settings, environ: MutableMapping[str, str] | None = None
                        ) -> tuple[ListenSockets | None, Settings]:
    """The sockets passed by systemd or by a re-exec (``None``: none were), and the settings with
    the addresses those sockets really have."""
    env = os.environ if environ is None else environ
    inherited = _from_systemd(env)
    if inherited is not None:
        http, disque, disque_tls = inherited
        source = "systemd"
        env[KEPT_BY_SYSTEMD_ENV] = "1"  # for a SIGUSR2 re-exec, which gets them from this process
    elif env.get("GUNICORN_FD") and env.get("GUNICORN_PID"):
        http = _socket_of(int(env.pop("GUNICORN_FD").split(",")[0]))
        raw, raw_tls = env.get(DISQUE_FD_ENV), env.get(DISQUE_TLS_FD_ENV)
        disque = _socket_of(int(raw)) if raw else None
        disque_tls = _socket_of(int(raw_tls)) if raw_tls else None
        source = "re-exec"
    else:
        return None, settings
    for sock in (http, disque, disque_tls):  # gated by a stopping master that did not know it was passed on
        if sock is not None:
            admit_new_handshakes(sock)
    host, port = _address(http)
    changes: dict[str, object] = {"host": host, "port": port}
    if disque is not None:
        changes["disque_host"], changes["disque_port"] = _address(disque)
    else:
        changes["disque_port"] = 0
    if disque_tls is not None:
        changes["disque_host"], changes["disque_tls_port"] = _address(disque_tls)
    else:
        changes["disque_tls_port"] = 0
    return (ListenSockets(http, disque, source, disque_tls, kept_by_systemd=env.get(KEPT_BY_SYSTEMD_ENV) == "1"),
            settings.with_changes(**changes))


def bound_sockets(settings: Settings) -> ListenSockets:
    """Sockets bound here on the settings' addresses; :class:`SettingsError` naming the address
    (and the reason) when a port cannot be bound."""
    sockets = ListenSockets(bind(settings.host, settings.port, "HTTP"), None, "bound")
    try:
        if settings.disque_port:
            sockets.disque = bind(settings.disque_host, settings.disque_port, "Disque")
        if settings.disque_tls_port:
            sockets.disque_tls = bind(settings.disque_host, settings.disque_tls_port, "Disque over TLS")
    except SettingsError:
        sockets.close()
        raise
    return sockets


def bind(host: str, port: int, what: str) -> socket.socket:
    """A listening TCP socket on ``host:port``; :class:`SettingsError` (with the reason) if that fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(BACKLOG)
    except OSError as e:
        sock.close()
        hint = " (another process listens there)" if e.errno == 98 else ""
        raise SettingsError(f"cannot listen for {what} on {host}:{port}: {e.strerror}{hint}") from None
    return sock


def _from_systemd(env: MutableMapping[str, str]
                  ) -> tuple[socket.socket, socket.socket | None, socket.socket | None] | None:
    if "LISTEN_FDS" not in env:
        return None
    pid, count = env.pop("LISTEN_PID", ""), env.pop("LISTEN_FDS", "")
    names = env.pop("LISTEN_FDNAMES", "").split(":")
    if pid != str(os.getpid()) or not count.isdigit() or int(count) < 1:
        return None  # meant for another process
    fds = list(range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + int(count)))
    named = dict(zip(names, fds, strict=False)) if len(names) == len(fds) else {}
    http_fd = named.get("http", fds[0])
    disque_fd = named.get("disque", fds[1] if len(fds) > 1 and not named else None)
    tls_fd = named.get("disque-tls")
    for fd in fds:
        if fd not in (http_fd, disque_fd, tls_fd):
            os.close(fd)  # a socket this service has no use for
    return (_socket_of(http_fd), (_socket_of(disque_fd) if disque_fd is not None else None),
            (_socket_of(tls_fd) if tls_fd is not None else None))


def _socket_of(fd: int) -> socket.socket:
    """The listening TCP socket open at ``fd`` (kept at that descriptor)."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as e:
        raise SettingsError(f"inherited file descriptor {fd} is not a socket: {e.strerror}") from None
    if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
        raise SettingsError(f"inherited file descriptor {fd} is not a TCP socket")
    return sock


def _address(sock: socket.socket) -> tuple[str, int]:
    name = sock.getsockname()
    return str(name[0]), int(name[1])
