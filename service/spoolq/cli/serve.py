"""``spoolq serve``: check what it starts with, open (or inherit) the listening sockets, then run
the HTTP doors under gunicorn and the Disque door beside them (:mod:`spoolq.http.gunicorn.server`,
:mod:`spoolq.disque.supervisor`). The checks are ``spoolq check-config``'s
(:mod:`spoolq.cli.check_config`); the sockets and how they outlive a restart:
:mod:`spoolq.cli.listen_sockets`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spoolq.cli.command import Command
from spoolq.cli.limit_arguments import LIMIT_SETTINGS, add_limit_arguments
from spoolq.cli.tls_arguments import TLS_SETTINGS, add_tls_arguments
from spoolq.settings.server import DEFAULT_PORT, Settings, load_settings, root_origin

if TYPE_CHECKING:
    import socket

    from spoolq.access.auth import Authenticator
    from spoolq.cli.listen_sockets import ListenSockets
    from spoolq.disque.supervisor import Supervisor

SERVE_DESCRIPTION = """\
Run the service: the HTTP doors (EmoDB, MQ, SQS, console, /metrics) under gunicorn, and the
Disque door when --disque-port is given. Flags win over SPOOLQ_* environment variables.

It refuses to start, before listening, on what `spoolq check-config` reports as a failure
(every one printed; exit 2: settings or config; exit 3: data directory), and on a port it
cannot listen on.

data directory (--root): SPOOLQ_ROOT if set, else $STATE_DIRECTORY (systemd's
StateDirectory=), else /var/lib/spoolq when run as root or as a systemd service, else
$XDG_DATA_HOME/spoolq (~/.local/share/spoolq); never inside the installed package. The
container image uses /data; scripts/serve in a checkout uses ./data. The first line
logged says which one and why.

signals:
  HUP        reload: the config file (and the TLS files) are checked first, as
             check-config checks them; with any mistake nothing changes (the workers
             keep serving with what they have, every mistake is logged at ERROR, and
             /readyz and /metrics say the reload failed); else new workers on the same
             sockets and metrics (systemctl reload), and the declared queues are applied
             again. New workers that fail to boot are stopped, the old ones keep
             serving and the reload is reported as failed
  TERM       graceful stop: in-flight requests finish, waiting long polls and blocked
             GETJOBs are answered empty (up to 30 s)
  USR2       upgrade in place: a new generation runs the code now on disk on the same
             sockets; then TERM the old one (see docs/operations.md)

TLS (see docs/operations.md): with --certfile the HTTP port speaks only HTTPS (a clear-text
request gets 400); --disque-tls-port serves Disque over TLS. --client-ca asks every client for
a certificate (mutual TLS).

--in-memory serves a fresh data directory in memory (/dev/shm) with --fsync never, removed at
exit: for test suites that want speed over durability. Loopback only, unless --allow-in-memory.

Listening sockets passed by systemd (spoolq-http.socket, spoolq-disque.socket) are used
instead of --host/--port and --disque-host/--disque-port; they stay open across restarts."""


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path,
                   help="data directory (default: SPOOLQ_ROOT, else as described above: /var/lib/spoolq for "
                        "root and systemd, ~/.local/share/spoolq for a user)")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help=f"listen port (default {DEFAULT_PORT})")
    p.add_argument("--workers", type=int,
                   help="worker processes serving HTTP; one or two per CPU core (default 4)")
    p.add_argument("--threads", type=int,
                   help="requests each worker handles at once (default 32); a long poll that is waiting "
                        "for a message holds no thread, only while it looks")
    p.add_argument("--peers", type=int,
                   help="how many other processes poll the same queues (other workers, other nodes): "
                        "each bucket of messages is split into this many + 1 lanes, one per process, so "
                        "they rarely reach for the same message (default 0: as many lanes as processes "
                        "polling the data directory now, on every node, counted as they come and go)")
    p.add_argument("--fsync", choices=["always", "never"],
                   help="always: a send returns once the message is on stable storage (default); "
                        "never: for a data directory on tmpfs")
    p.add_argument("--flush", choices=["journal", "syncfs", "fsync"],
                   help="how sends are made durable: syncfs or journal (a per-process commit journal) on local "
                        "disks, fsync on NFS, CIFS, FUSE/GlusterFS and other network file systems (default: the "
                        "one that fits the file system --root is on, measured fastest there: journal on ext4, "
                        "syncfs on XFS; spoolq check-config names it)")
    p.add_argument("--force-flush", dest="force_flush", action="store_true", default=None,
                   help="use --flush syncfs/journal even on a network or FUSE file system, where it may not "
                        "reach stable storage")
    p.add_argument("--config", type=Path, help="YAML file with api_keys (and SQS credentials)")
    p.add_argument("--node-id", dest="node_id", help="unique id of this node among nodes sharing --root")
    p.add_argument("--allow-open", dest="allow_open", action="store_true", default=None,
                   help="allow a non-loopback --host with no credentials configured (every door open)")
    p.add_argument("--max-body-bytes", dest="max_body_bytes", type=int, help="413 above this request size")
    p.add_argument("--disque-port", dest="disque_port", type=int,
                   help="also serve Disque's job commands over RESP on this port (off by default; Disque uses 7711)")
    p.add_argument("--disque-host", dest="disque_host", help="Disque listen address (default 127.0.0.1)")
    add_limit_arguments(p)
    add_tls_arguments(p)
    p.add_argument("--in-memory", dest="in_memory", action="store_true",
                   help="for tests: a fresh data directory in memory, no flush, removed at exit (every message "
                        "is lost then); loopback only")
    p.add_argument("--allow-in-memory", dest="allow_in_memory", action="store_true",
                   help="allow --in-memory on a non-loopback --host")
    p.add_argument("--access-log", dest="access_log", action="store_true", help="log every request to stderr")


def run_serve(args: argparse.Namespace) -> int:
    if not args.in_memory:
        return _serve(args)
    from spoolq.cli import in_memory

    try:
        in_memory.check(root=args.root, host=args.host or os.environ.get("SPOOLQ_HOST"),
                        allowed=args.allow_in_memory)
    except in_memory.InMemoryRefused as e:
        print(f"spoolq: {e}", file=sys.stderr, flush=True)
        return 2
    root, in_ram = in_memory.make_root()
    master = os.getpid()
    print(f"spoolq: --in-memory: data in {root} ({'memory' if in_ram else 'no tmpfs at /dev/shm: on disk'}, "
          "no flush), removed at exit", file=sys.stderr, flush=True)
    args.root, args.fsync = root, "never"
    try:
        return _serve(args)
    finally:
        if os.getpid() == master:
            in_memory.remove_root(root)


def _serve(args: argparse.Namespace) -> int:
    settings, origin = _settings(args)
    say(f"data directory {settings.root} ({origin})")
    from spoolq.cli.check_config import failures
    from spoolq.cli.listen_sockets import bound_sockets, inherited_sockets
    from spoolq.config.check import check

    # what check-config checks, with the addresses of inherited sockets (they carry their own);
    # then the ports, before anything is started or printed: a busy port fails at once
    inherited, settings = inherited_sockets(settings)
    accepted = check(settings)
    failed = failures(settings, accepted)
    if failed:
        if inherited is not None:
            inherited.close()
        for check_line in failed:
            say(check_line.text)
        return failed[0].exit_code
    sockets = inherited if inherited is not None else bound_sockets(settings)
    from spoolq.config.declared_queues import apply_from_settings
    from spoolq.config.declared_topics import apply_topics_from_settings
    from spoolq.http.gunicorn.reload_state import ReloadState

    refused = apply_from_settings(settings, say, lambda line: say(f"error: {line}"))
    refused += apply_topics_from_settings(settings, say, lambda line: say(f"error: {line}"))
    assert accepted.authenticator is not None  # nothing failed
    auth = accepted.authenticator
    for note in auth.notes:
        say(f"config: {note}")
    from spoolq.http.gunicorn.server import prepare_metrics_dir, remove_metrics_dir, serve

    # The Disque listener writes its metrics where the workers' /metrics reads them: choose the
    # directory before it starts (it inherits the environment).
    prepare_metrics_dir()
    master = os.getpid()
    disque = _start_disque(settings, sockets)
    _announce(settings, sockets, auth)
    final_stop: list[bool] = []  # the master's stop found no other process keeping the sockets
    try:
        serve(settings, accepted, ReloadState.started(refused), create_app=worker_app, access_log=args.access_log,
              listener_fd=sockets.http.detach(), listeners_kept_elsewhere=sockets.kept_by_systemd,
              on_final_stop=lambda: final_stop.append(True))
    finally:
        # gunicorn's workers are forked from here and leave through this frame too: only the
        # master stops what the master started
        if os.getpid() == master:
            if disque is not None:
                if final_stop:  # the Disque listener then serves what waits and closes the port for good
                    _gate(sockets.disque, sockets.disque_tls)
                disque.stop()  # gracefully: it answers its blocked GETJOBs, counted in the metrics
            remove_metrics_dir()
    return 0


def _gate(*listeners: socket.socket | None) -> None:
    """Drop new connection attempts to ``listeners`` (:mod:`spoolq.access.listener_gate`)."""
    from spoolq.access.listener_gate import refuse_new_handshakes

    for listener in listeners:
        if listener is not None:
            refuse_new_handshakes(listener)


def _settings(args: argparse.Namespace) -> tuple[Settings, str]:
    """The settings the flags (over ``SPOOLQ_*`` and the defaults) give, and where the data
    directory came from."""
    overrides = {k: getattr(args, k) for k in ("root", "host", "port", "workers", "threads", "peers", "config",
                                               "node_id", "allow_open", "max_body_bytes", "flush", "force_flush",
                                               *LIMIT_SETTINGS,
                                               "disque_port", "disque_host", *TLS_SETTINGS)}
    if args.fsync is not None:
        overrides["fsync"] = args.fsync == "always"
    return load_settings(overrides), root_origin(overrides)


def _start_disque(settings: Settings, sockets: ListenSockets) -> Supervisor | None:
    """The Disque listener, a child process that dies with this one, when it has a socket; its
    sockets are kept by a SIGUSR2 re-exec."""
    if sockets.disque is None and sockets.disque_tls is None:
        return None
    from spoolq.cli.listen_sockets import DISQUE_FD_ENV, DISQUE_TLS_FD_ENV
    from spoolq.disque.supervisor import Supervisor

    for sock, env in ((sockets.disque, DISQUE_FD_ENV), (sockets.disque_tls, DISQUE_TLS_FD_ENV)):
        if sock is not None:
            sock.set_inheritable(True)  # kept by a SIGUSR2 re-exec
            os.environ[env] = str(sock.fileno())
    return Supervisor(settings, sockets.disque, sockets.disque_tls).start()


def _announce(settings: Settings, sockets: ListenSockets, auth: Authenticator) -> None:
    """The start-up lines that say what is served where."""
    from spoolq.cli.check_config import flush_check

    scheme = "https" if settings.certfile is not None else "http"
    print(f"spoolq: serving {scheme}://{settings.host}:{settings.port} root={settings.root} "
          f"workers={settings.workers}x{settings.threads} gthread fsync={'always' if settings.fsync else 'never'} "
          f"{flush_check(settings).text} {auth.summary()}"
          + ("" if sockets.source == "bound" else f" (sockets from {sockets.source})"),
          file=sys.stderr, flush=True)
    print(f"spoolq: console {console_url(settings.host, settings.port, scheme=scheme)}  API docs "
          f"{console_url(settings.host, settings.port, '/docs/', scheme=scheme)}", file=sys.stderr, flush=True)
    if sockets.disque is not None:
        print(f"spoolq: serving Disque on {settings.disque_host}:{settings.disque_port}", file=sys.stderr, flush=True)
    if sockets.disque_tls is not None:
        print(f"spoolq: serving Disque over TLS on {settings.disque_host}:{settings.disque_tls_port}",
              file=sys.stderr, flush=True)


def worker_app(settings: Settings) -> Any:
    """The app each gunicorn worker serves, built after the fork: Flask, the doors and
    prometheus-client are imported there, never in the master, so the workers a reload starts
    import the code on disk then."""
    from spoolq.http.app import create_app

    return create_app(settings)


def say(line: str) -> None:
    """One line of the start-up log, on stderr."""
    print(f"spoolq: {line}", file=sys.stderr, flush=True)


def console_url(host: str, port: int, path: str = "/console/", *, scheme: str = "http") -> str:
    """The URL a browser on this machine opens for ``path`` (a wildcard listen address is reached on loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"{scheme}://{shown}:{port}{path}"


SERVE = Command(
    "serve", "run the service (HTTP doors under gunicorn, optionally Disque)", _arguments, run_serve,
    examples="""
spoolq serve --root /var/lib/spoolq --port 8480
spoolq serve --host 0.0.0.0 --config /etc/spoolq/spoolq.yaml --workers 8""",
    description=SERVE_DESCRIPTION)
