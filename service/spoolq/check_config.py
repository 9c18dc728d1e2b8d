"""``spoolq check-config``: validate what ``spoolq serve`` would start with, without serving.

Run before a start (the systemd unit's ``ExecStartPre``) or after editing the config. It takes
the same ``SPOOLQ_*`` environment and the same storage/listen flags as ``serve`` and checks, in order:

1. the settings (ports, worker counts, flush mode...);
2. the YAML config: API keys and permissions, SQS credentials when the SQS door reads them;
3. the listen policy (no open mode on a network address without ``--allow-open``);
4. the root: it exists or can be created, a file can be written, flushed and removed in its
   ``tmp/``, and how much space is free.

Each check prints one line on stdout. Exit status: 0 all good; 2 a setting or the config is
invalid; 3 the root is not usable (missing and not creatable, read-only, not a directory).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from spoolq.settings import Settings, SettingsError, load_settings

EXIT_OK, EXIT_CONFIG, EXIT_ROOT = 0, 2, 3


def add_check_config(sub: Any) -> None:
    p = sub.add_parser(
        "check-config", help="validate settings, config file and data directory without serving",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        epilog="examples:\n  spoolq check-config --root /var/lib/spoolq --config /etc/spoolq/spoolq.yaml\n"
               "  SPOOLQ_ROOT=/srv/q spoolq check-config && spoolq serve",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, help="data directory (default: $SPOOLQ_ROOT or ./data in the checkout)")
    p.add_argument("--config", type=Path, help="YAML file with api_keys and SQS credentials")
    p.add_argument("--host", help="listen address the service will use (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port the service will use")
    p.add_argument("--flush", choices=["syncfs", "fsync"], help="group-commit flush mode")
    p.add_argument("--allow-open", dest="allow_open", action="store_true", default=None,
                   help="allow a non-loopback --host without API keys")
    p.set_defaults(handler=run_check_config)


def run_check_config(args: argparse.Namespace) -> int:
    overrides = {k: getattr(args, k, None) for k in ("root", "config", "host", "port", "flush", "allow_open")}
    try:
        settings = load_settings(overrides)
        print(f"ok: settings (root={settings.root}, listen {settings.host}:{settings.port}, "
              f"{settings.workers}x{settings.threads} workers, flush={settings.flush})")
        check_config_file(settings)
    except SettingsError as e:
        print(f"spoolq check-config: {e}", file=sys.stderr)
        return EXIT_CONFIG
    problem = check_root(settings.root)
    if problem is not None:
        print(f"spoolq check-config: root {settings.root}: {problem}", file=sys.stderr)
        return EXIT_ROOT
    free = shutil.disk_usage(settings.root).free
    print(f"ok: root {settings.root} is writable ({free / 2**30:.1f} GiB free)")
    return EXIT_OK


def check_config_file(settings: Settings) -> None:
    """Raise :class:`SettingsError` for an unreadable or invalid config or listen policy."""
    from spoolq.http.auth import Authenticator, check_listen_policy
    from spoolq.queue_settings import format_duration, load_queue_defaults

    auth = Authenticator.from_settings(settings)  # identities: API keys and SigV4 credentials
    if settings.config is not None:
        print(f"ok: config {settings.config} ({auth.summary()})")
    else:
        print("ok: no config file (open mode)")
    defaults = load_queue_defaults(settings)
    if defaults.archive:
        print(f"ok: new queues keep an archive for {format_duration(defaults.archive_retention)}")
    check_listen_policy(settings, auth, (settings.disque_host,) if settings.disque_port else ())
    print(f"ok: listen policy for {settings.host}")


def check_root(root: Path) -> str | None:
    """None when ``root`` can hold a store, else what is wrong."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / "tmp").mkdir(exist_ok=True)
    except OSError as e:
        return f"cannot create it: {e.strerror or e}"
    if not root.is_dir():
        return "is not a directory"
    probe = root / "tmp" / f"check-config-{os.getpid()}.tmp"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"spoolq check-config")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"not writable: {e.strerror or e}"
    return None
