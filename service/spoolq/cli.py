"""The ``spoolq`` command. Subcommands are argparse subparsers; each has a ``run_<name>`` function.

``spoolq serve``      run the HTTP service (EmoDB, MQ and SQS doors) under gunicorn
``spoolq hash-key``   print the SHA-256 digest to put in the config for an API key
``spoolq check-config`` validate settings, config and root without serving (:mod:`spoolq.check_config`)
``spoolq backup | restore`` a consistent copy of a live root, and putting one back (:mod:`spoolq.backup`)
``spoolq send | poll | ack | peek | size | purge | move | tail | queues``
                      client commands over HTTP (:mod:`spoolq.cli_client`)
``spoolq settings``   print or change a queue's settings (:mod:`spoolq.cli_settings`)
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spoolq import __version__
from spoolq.check_config import add_check_config
from spoolq.cli_backup import add_backup_commands
from spoolq.cli_client import CliError, add_client_commands
from spoolq.cli_pipeline import add_pipeline_command
from spoolq.cli_settings import add_settings_command
from spoolq.settings import DEFAULT_PORT, SettingsError, load_settings

Handler = Callable[[argparse.Namespace], int]


SERVE_DESCRIPTION = """\
Run the service: the HTTP doors (EmoDB, MQ, SQS, console, /metrics) under gunicorn, and the
Disque door when --disque-port is given. Flags win over SPOOLQ_* environment variables.

It refuses to start, before listening, on what `spoolq check-config` reports as a failure
(exit 2: settings or config; exit 3: data directory), and on a port it cannot listen on.

signals:
  HUP        reload: new workers, same sockets and metrics (systemctl reload); the config
             file's declared queues are applied again
  TERM       graceful stop: in-flight requests finish, waiting long polls and blocked
             GETJOBs are answered empty (up to 30 s)
  USR2       upgrade in place: a new generation runs the code now on disk on the same
             sockets; then TERM the old one (see docs/operations.md)

Listening sockets passed by systemd (spoolq-http.socket, spoolq-disque.socket) are used
instead of --host/--port and --disque-host/--disque-port; they stay open across restarts."""


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the service (HTTP doors under gunicorn, optionally Disque)",
                       description=SERVE_DESCRIPTION,
                       epilog="examples:\n  spoolq serve --root /var/lib/spoolq --port 8480\n"
                              "  spoolq serve --host 0.0.0.0 --config /etc/spoolq/spoolq.yaml --workers 8",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, help="data directory (default: ./data in the checkout)")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help=f"listen port (default {DEFAULT_PORT})")
    p.add_argument("--workers", type=int,
                   help="worker processes serving HTTP; one or two per CPU core (default 4)")
    p.add_argument("--threads", type=int,
                   help="requests each worker handles at once (default 32); a long poll that is waiting "
                        "for a message holds no thread, only while it looks")
    p.add_argument("--peers", type=int,
                   help="when many consumers poll one queue at once, spread them over this many "
                        "candidate messages so they rarely reach for the same one (default 0: off)")
    p.add_argument("--fsync", choices=["always", "never"],
                   help="always: a send returns once the message is on stable storage (default); "
                        "never: for a data directory on tmpfs")
    p.add_argument("--flush", choices=["journal", "syncfs", "fsync"],
                   help="how sends are made durable: syncfs or journal (a per-process commit journal) on local "
                        "disks, fsync on NFS, CIFS, FUSE/GlusterFS and other network file systems (default: the "
                        "one that fits the file system --root is on)")
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
    p.add_argument("--access-log", dest="access_log", action="store_true", help="log every request to stderr")
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    overrides = {k: getattr(args, k) for k in ("root", "host", "port", "workers", "threads", "peers", "config",
                                               "node_id", "allow_open", "max_body_bytes", "flush", "force_flush",
                                               "disque_port", "disque_host")}
    if args.fsync is not None:
        overrides["fsync"] = args.fsync == "always"
    settings = load_settings(overrides)
    from spoolq.check_config import first_failure, flush_check
    from spoolq.listeners import DISQUE_FD_ENV, bound_listeners, inherited_listeners

    # what check-config checks, with the addresses of inherited sockets (they carry their own);
    # then the ports, before anything is started or printed: a busy port fails at once
    inherited, settings = inherited_listeners(settings)
    failed = first_failure(settings)
    if failed is not None:
        if inherited is not None:
            inherited.close()
        print(f"spoolq: {failed.text}", file=sys.stderr, flush=True)
        return failed.exit_code
    listeners = inherited if inherited is not None else bound_listeners(settings)
    from spoolq.declared_queues import apply_from_settings

    apply_from_settings(settings, lambda line: print(f"spoolq: {line}", file=sys.stderr, flush=True))
    # Imported late: the metrics mode must be chosen before prometheus_client is imported.
    from spoolq.auth import Authenticator

    auth = Authenticator.from_settings(settings)
    for note in auth.notes:
        print(f"spoolq: config: {note}", file=sys.stderr, flush=True)
    from spoolq.http.server import prepare_metrics_dir, remove_metrics_dir, serve

    # The Disque listener writes its metrics where the workers' /metrics reads them: choose the
    # directory before it starts (it inherits the environment).
    prepare_metrics_dir()
    master = os.getpid()
    disque = None
    if listeners.disque is not None:
        from spoolq.disque.supervisor import Supervisor  # a child process that dies with this one

        listeners.disque.set_inheritable(True)  # kept by a SIGUSR2 re-exec
        os.environ[DISQUE_FD_ENV] = str(listeners.disque.fileno())
        disque = Supervisor(settings, listeners.disque).start()
    print(f"spoolq: serving http://{settings.host}:{settings.port} root={settings.root} "
          f"workers={settings.workers}x{settings.threads} gthread fsync={'always' if settings.fsync else 'never'} "
          f"{flush_check(settings).text} {auth.summary()}"
          + ("" if listeners.source == "bound" else f" (sockets from {listeners.source})"),
          file=sys.stderr, flush=True)
    print(f"spoolq: console {console_url(settings.host, settings.port)}  API docs "
          f"{console_url(settings.host, settings.port, '/docs/')}", file=sys.stderr, flush=True)
    if disque is not None:
        print(f"spoolq: serving Disque on {settings.disque_host}:{settings.disque_port}", file=sys.stderr, flush=True)
    try:
        serve(settings, access_log=args.access_log, listener_fd=listeners.http.detach())
    finally:
        # gunicorn's workers are forked from here and leave through this frame too: only the
        # master stops what the master started
        if os.getpid() == master:
            if disque is not None:
                disque.stop()  # gracefully: it answers its blocked GETJOBs, counted in the metrics
            remove_metrics_dir()
    return 0


def console_url(host: str, port: int, path: str = "/console/") -> str:
    """The URL a browser on this machine opens for ``path`` (a wildcard listen address is reached on loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}{path}"


def _add_hash_key(sub: Any) -> None:
    p = sub.add_parser("hash-key", help="print the sha256 of an API key for the config file",
                       epilog="example:\n  echo -n 'my-key' | spoolq hash-key --stdin",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stdin", action="store_true", help="read the key from standard input instead of a prompt")
    p.set_defaults(handler=run_hash_key)


def run_hash_key(args: argparse.Namespace) -> int:
    from spoolq.auth import hash_key

    key = sys.stdin.readline().rstrip("\n") if args.stdin else getpass.getpass("API key: ")
    if not key:
        print("spoolq: empty key", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spoolq", description="spoolq: a durable file-per-message queue")
    parser.add_argument("--version", action="version", version=f"spoolq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (_add_serve, _add_hash_key, add_check_config, add_backup_commands):
        add(sub)
    add_client_commands(sub)  # send, poll, ack, peek, size, purge, move, tail, queues
    add_settings_command(sub)  # settings (the same client plumbing)
    add_pipeline_command(sub)  # Spark pipelines (spoolq-spark)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["pipeline"]:  # everything after it belongs to spoolq-spark's own parser
        argv = ["pipeline", "--", *argv[1:]]
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except SettingsError as e:
        print(f"spoolq: {e}", file=sys.stderr)
        return 2
    except CliError as e:
        print(f"spoolq: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
