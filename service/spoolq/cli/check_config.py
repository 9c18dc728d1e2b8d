"""``spoolq check-config``: validate what ``spoolq serve`` would start with, without serving.

Run before a start (the systemd unit's ``ExecStartPre``) or after editing the config. It takes
the same ``SPOOLQ_*`` environment and the same storage/listen flags as ``serve`` and checks, in order:

1. the settings (ports, worker counts...), then the flush mode: the one that fits the file system
   the root is on, or the one asked for (refused on a network or FUSE file system unless forced);
2. the YAML config: API keys, every permission against its grammar, SQS credentials, queue defaults,
   declared queues (:mod:`spoolq.declared_queues`: every mistake, one line each);
3. the listen policy (no open mode on a network address without ``--allow-open``), then TLS
   (:mod:`spoolq.tls`): each file usable, no clear-text Disque port carrying keys next to it;
4. the root: a directory (created when missing), writable (a file is written, flushed and
   removed in its ``tmp/``; the store's own directories are writable too), its file system (a
   warning on ext4 made without a journal), and its free space.

Each check prints one line on stdout: ``ok: ...``, ``warning: ...`` or ``FAILED: ...``; the first
failure ends the run. Exit status: 0 all good (warnings included); 2 a setting or the config is
invalid (the line names the entry and the bad part); 3 the root is not usable (missing and not
creatable, a file, read-only). A root whose file system is full is a warning, not a failure: the
service starts, serves reads, polls and acks, and answers sends with 503 until space is freed.

``spoolq serve`` runs the same checks (:func:`checks`) and refuses to start on the same failures.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from spoolq.cli.command import Command
from spoolq.cli.tls_arguments import TLS_SETTINGS, add_tls_arguments
from spoolq.server_settings import Settings, SettingsError, load_settings

EXIT_OK, EXIT_CONFIG, EXIT_ROOT = 0, 2, 3

#: the root's directories the store writes into, when they exist already
STORE_DIRS = ("tmp", "queues", "trash", "moves", "archive", "journal", "corrupt")

DESCRIPTION = """\
Validate what `spoolq serve` would start with, without serving. Takes the same SPOOLQ_*
environment and flags as `serve`, and checks in order:

  1. the settings (ports, worker counts, flush mode);
  2. the config file: API keys, every permission against the grammar
     queue|<post,poll,get_status,admin>|<queue or pattern>, SQS credentials,
     queue_defaults, queues (every mistake in a declared queue, one line each);
  3. the listen policy (no open mode on a network address without --allow-open),
     then TLS: the certificate, its key (they must match), the client CA;
  4. the data directory: a directory (created when missing), writable (a file is
     written, flushed and removed), and its free space.

One line per check on stdout: "ok: ...", "warning: ..." or "FAILED: ..."; the first
failure ends the run. `spoolq serve` refuses to start on the same failures.

exit status:
  0  all good (a full disk is a warning: sends answer 503 until space is freed)
  2  a setting or the config file is invalid (the line names the entry and the bad part)
  3  the data directory is not usable (cannot be created, a file, read-only)"""


@dataclass(frozen=True)
class Check:
    """The result of one check: what ``check-config`` prints as one line."""

    status: str  # "ok", "warning" or "FAILED"
    text: str
    exit_code: int = EXIT_OK  # for a failure: EXIT_CONFIG or EXIT_ROOT
    final: bool = True  # a failure that ends the run (False: more lines of the same check follow)

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"

    def line(self) -> str:
        return f"{self.status}: {self.text}"


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, help="data directory (default: $SPOOLQ_ROOT or ./data in the checkout)")
    p.add_argument("--config", type=Path, help="YAML file with api_keys and SQS credentials")
    p.add_argument("--host", help="listen address the service will use (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="listen port the service will use")
    p.add_argument("--flush", choices=["syncfs", "journal", "fsync"],
                   help="how sends are made durable (default: the one that fits the root's file system)")
    p.add_argument("--force-flush", dest="force_flush", action="store_true", default=None,
                   help="accept --flush syncfs/journal on a network or FUSE file system")
    p.add_argument("--fsync", choices=["always", "never"], help="durability of sends (default always)")
    p.add_argument("--disque-port", dest="disque_port", type=int, help="Disque port the service will use")
    p.add_argument("--disque-host", dest="disque_host", help="Disque listen address the service will use")
    p.add_argument("--allow-open", dest="allow_open", action="store_true", default=None,
                   help="allow a non-loopback --host without API keys")
    add_tls_arguments(p)


def run_check_config(args: argparse.Namespace) -> int:
    overrides = {k: getattr(args, k, None) for k in ("root", "config", "host", "port", "flush", "force_flush",
                                                     "allow_open", "disque_port", "disque_host", *TLS_SETTINGS)}
    if getattr(args, "fsync", None) is not None:
        overrides["fsync"] = args.fsync == "always"
    try:
        settings = load_settings(overrides)
    except SettingsError as e:
        print(Check("FAILED", f"settings: {e}", EXIT_CONFIG).line(), flush=True)
        return EXIT_CONFIG
    for check in checks(settings):
        print(check.line(), flush=True)
        if check.failed and check.final:
            return check.exit_code
    return EXIT_OK


CHECK_CONFIG = Command(
    "check-config", "validate settings, config file and data directory without serving", _arguments,
    run_check_config, description=DESCRIPTION, examples="""
spoolq check-config --root /var/lib/spoolq --config /etc/spoolq/spoolq.yaml
SPOOLQ_ROOT=/srv/q spoolq check-config && spoolq serve""")


def checks(settings: Settings) -> Iterator[Check]:
    """Every check of ``settings``, in order; stop reading at the first failed one."""
    yield Check("ok", f"settings (root={settings.root}, listen {settings.host}:{settings.port}, "
                      f"{settings.workers} workers x {settings.threads} threads, flush={settings.flush or 'auto'}, "
                      f"fsync={'always' if settings.fsync else 'never'})")
    yield flush_check(settings)
    yield from check_config_file(settings)
    yield from check_root(settings.root)


def flush_check(settings: Settings) -> Check:
    """The flush the store will use at the root (spoolq.store.filesystems): the one asked for, refused
    where it may not reach stable storage unless forced, else the one that fits the file system."""
    from spoolq.store.filesystems import UnsafeFlush, choose_flush

    if not settings.fsync:
        return Check("ok", "flush=none (--fsync never)")
    try:
        return Check("ok", choose_flush(settings.root, settings.flush or None, settings.force_flush).describe())
    except UnsafeFlush as e:
        return Check("FAILED", str(e), EXIT_CONFIG)


def check_config_file(settings: Settings) -> Iterator[Check]:
    """The config file (identities, permissions) and the listen policy."""
    from spoolq.auth import Authenticator, check_listen_policy

    try:
        auth = Authenticator.from_settings(settings)  # identities: API keys, permissions, SigV4 credentials
    except SettingsError as e:
        yield Check("FAILED", str(e), EXIT_CONFIG)
        return
    if settings.config is not None:
        yield Check("ok", f"config {settings.config} ({auth.summary()})")
    else:
        yield Check("ok", "no config file (open mode)")
    from spoolq.queue_settings import format_duration, load_queue_defaults

    try:
        defaults = load_queue_defaults(settings)
    except SettingsError as e:
        yield Check("FAILED", str(e), EXIT_CONFIG)
        return
    if defaults.archive:
        yield Check("ok", f"new queues keep an archive for {format_duration(defaults.archive_retention)}")
    from spoolq.declared_queues import declarations_checks

    failed = False
    for status, text, final in declarations_checks(settings):  # one line per mistake
        failed = status == "FAILED"
        yield Check(status, text, EXIT_CONFIG if failed else EXIT_OK, final)
    if failed:
        return
    disque = settings.disque_port or settings.disque_tls_port
    hosts = (settings.host, settings.disque_host) if disque else (settings.host,)
    try:
        check_listen_policy(settings, auth, hosts[1:])
    except SettingsError as e:
        yield Check("FAILED", f"listen policy: {e}", EXIT_CONFIG)
        return
    yield Check("ok", f"listen policy for {', '.join(dict.fromkeys(hosts))}")
    yield from check_tls(settings, keys_configured=not auth.open)


def check_tls(settings: Settings, *, keys_configured: bool) -> Iterator[Check]:
    """The TLS files (each one usable, the first that is not named) and no secret on a clear-text
    port once TLS is configured (:mod:`spoolq.tls`)."""
    from spoolq.tls import TlsFileError, check_files, clear_text_problem

    try:
        described = check_files(settings)
    except TlsFileError as e:
        yield Check("FAILED", f"tls: {e}", EXIT_CONFIG)
        return
    if not described:
        return
    problem = clear_text_problem(settings, keys_configured=keys_configured)
    if problem is not None:
        yield Check("FAILED", f"tls: {problem}", EXIT_CONFIG)
        return
    yield Check("ok", described)


def check_root(root: Path) -> Iterator[Check]:
    """The root's real state: a writable directory (created if missing) and its free space."""
    if root.exists() and not root.is_dir():
        yield Check("FAILED", f"root {root} is a file, not a directory", EXIT_ROOT)
        return
    if not root.exists():
        try:
            root.mkdir(parents=True)
        except OSError as e:
            yield Check("FAILED", f"root {root} does not exist and cannot be created: {e.strerror or e}", EXIT_ROOT)
            return
        yield Check("ok", f"root {root} created")
    from spoolq.store.filesystems import ext4_without_journal, headroom

    problem = _write_problem(root)
    if problem == errno.ENOSPC:
        room = headroom(root)
        what = "no free inodes" if room.free_inodes == 0 else "no space left"
        yield Check("warning", f"root {root}: {what} on its file system ({room.describe()}): sends answer "
                               "503 until space is freed; peeks, polls and acks work")
        return
    if problem is not None:
        yield Check("FAILED", f"root {root} exists but is not writable ({os.strerror(problem)})", EXIT_ROOT)
        return
    for name in STORE_DIRS:
        d = root / name
        if d.exists() and not (d.is_dir() and os.access(d, os.W_OK | os.X_OK)):
            yield Check("FAILED", f"root {root}: {name}/ is not a writable directory", EXIT_ROOT)
            return
    device = ext4_without_journal(root)
    if device is not None:
        yield Check("warning", f"root {root}: its file system ({device}) is ext4 without a journal: a rename is not "
                               "atomic across a power cut until fsck has run, and after many deletes each new "
                               "message file costs far more CPU; use ext4 with its journal (mkfs.ext4's default), "
                               "XFS or btrfs")
    room = headroom(root)
    if room.free_bytes == 0:
        yield Check("warning", f"root {root}: no space left on its file system: sends answer 503 until "
                               "space is freed; peeks, polls and acks work")
        return
    if room.inodes_short:
        yield Check("warning", f"root {root}: {room.describe()}: fewer than 5% of its inodes are left, and sends "
                               "answer 503 when none is; make the file system with more inodes (mkfs.ext4 -i) "
                               "or use XFS or btrfs")
        return
    yield Check("ok", f"root {root} is writable ({room.describe()})")


def _write_problem(root: Path) -> int | None:
    """The errno of writing, flushing and removing a file in ``root/tmp`` (None: it worked)."""
    tmp = root / "tmp"
    try:
        tmp.mkdir(exist_ok=True)
        probe = tmp / f"check-config-{os.getpid()}.tmp"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"spoolq check-config")
            os.fsync(fd)
        finally:
            os.close(fd)
            probe.unlink(missing_ok=True)
    except OSError as e:
        return e.errno or errno.EIO
    return None


def first_failure(settings: Settings) -> Check | None:
    """What ``serve`` refuses to start on (None: nothing); warnings are printed to stderr."""
    for check in checks(settings):
        if check.failed:
            return check
        if check.status == "warning":
            print(f"spoolq: warning: {check.text}", file=sys.stderr, flush=True)
    return None
