"""``spoolq check-config``: validate what ``spoolq serve`` would start with, without serving.

Run before a start (the systemd unit's ``ExecStartPre``) or after editing the config. It takes
the same ``SPOOLQ_*`` environment and the same storage/listen flags as ``serve`` and checks, in order:

1. the settings (ports, worker counts...), then the flush mode: the one that fits the file system
   the root is on, or the one asked for (refused on a network or FUSE file system unless forced);
2. the YAML config, the listen policy and TLS: :mod:`spoolq.config.check`, the one checker
   ``serve`` also runs at start and before every reload (every mistake on its own line, unknown
   keys at every level with the closest known one);
3. the root: a directory, writable (a file is written, flushed and removed in its ``tmp/``; the
   store's own directories are writable too), its file system (a warning on ext4 made without a
   journal), and its free space. A root that does not exist yet is not made: it is checked that
   ``serve`` can make it (its nearest existing parent is a writable directory); its headroom
   (:mod:`spoolq.observability.readiness`: a warning when a message of the largest accepted size no longer
   fits, or when the free space or inodes are under ``low_space_percent`` /
   ``low_inodes_percent``), with the commit journal's share.

Before the root, the connection limits one worker will keep (``max_connections``, lowered to
what the open-file limit allows, and ``header_timeout``).

Each check prints lines on stdout: ``ok: ...``, ``warning: ...`` or ``FAILED: ...``; every check
runs, a part with a mistake prints its ``FAILED`` lines and no ``ok`` line. Exit status (of the
first failure): 0 all good (warnings included); 2 a setting or the config is invalid (the line
names the entry and the bad part); 3 the root is not usable (not creatable, a file, not writable;
the line says who owns it and which user spoolq runs as). A root whose file system is full is a
warning, not a failure: the service starts, serves reads, polls and acks, and answers sends with
503 until space is freed.

``spoolq serve`` runs the same checks (:func:`checks`), making a missing root, and refuses to start
on the same failures, printing every one.
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
from spoolq.cli.limit_arguments import LIMIT_SETTINGS, add_limit_arguments
from spoolq.cli.tls_arguments import TLS_SETTINGS, add_tls_arguments
from spoolq.config.check import ConfigCheck
from spoolq.settings.server import Settings, SettingsError, connections_within, load_settings

EXIT_OK, EXIT_CONFIG, EXIT_ROOT = 0, 2, 3

#: the root's directories the store writes into, when they exist already
STORE_DIRS = ("tmp", "queues", "trash", "moves", "archive", "journal", "corrupt")

DESCRIPTION = """\
Validate what `spoolq serve` would start with, without serving. Takes the same SPOOLQ_*
environment and flags as `serve`, and checks in order:

  1. the settings (ports, worker counts, flush mode);
  2. the config file: its keys at every level (a misspelt one is named with the
     closest known key), API keys, every permission against the grammar
     queue|<post,poll,get_status,admin>|<queue or pattern>, SQS credentials,
     queue_defaults, queues; then the listen policy (no open mode on a network
     address without --allow-open) and TLS: the certificate, its key (they must
     match), the client CA. This is the check `spoolq serve` runs at start and
     before every reload (SIGHUP);
  3. the connection limits of each worker (--max-connections, within the open-file
     limit; --header-timeout);
  4. the data directory: a directory, writable (a file is written, flushed and
     removed), and its headroom: a warning when a message of the largest accepted
     size (--max-body-bytes) no longer fits, or when free space or inodes are under
     --low-space-percent / --low-inodes-percent; one that does not exist yet is not
     made, only checked that serve can make it.

Every mistake is printed, one "FAILED: ..." line each; "ok: ..." lines only for
what passed; "warning: ..." for what works but should be looked at.

exit status (of the first failure):
  0  all good (a full disk is a warning: sends answer 503 until space is freed)
  2  a setting or the config file is invalid (the line names the entry and the bad part)
  3  the data directory is not usable (cannot be created, a file, not writable)"""


@dataclass(frozen=True)
class Check:
    """The result of one check: what ``check-config`` prints as one line."""

    status: str  # "ok", "warning" or "FAILED"
    text: str
    exit_code: int = EXIT_OK  # for a failure: EXIT_CONFIG or EXIT_ROOT

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"

    def line(self) -> str:
        return f"{self.status}: {self.text}"


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, help="data directory (default: as spoolq serve chooses it, see its --help)")
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
    p.add_argument("--max-body-bytes", dest="max_body_bytes", type=int, help="the largest request the service takes")
    add_limit_arguments(p)
    add_tls_arguments(p)


def run_check_config(args: argparse.Namespace) -> int:
    overrides = {k: getattr(args, k, None) for k in ("root", "config", "host", "port", "flush", "force_flush",
                                                     "allow_open", "disque_port", "disque_host", "max_body_bytes",
                                                     *LIMIT_SETTINGS,
                                                     *TLS_SETTINGS)}
    if getattr(args, "fsync", None) is not None:
        overrides["fsync"] = args.fsync == "always"
    try:
        settings = load_settings(overrides)
    except SettingsError as e:
        print(Check("FAILED", f"settings: {e}", EXIT_CONFIG).line(), flush=True)
        return EXIT_CONFIG
    status = EXIT_OK
    for check in checks(settings):
        print(check.line(), flush=True)
        if check.failed and status == EXIT_OK:
            status = check.exit_code
    return status


CHECK_CONFIG = Command(
    "check-config", "validate settings, config file and data directory without serving", _arguments,
    run_check_config, description=DESCRIPTION, examples="""
spoolq check-config --root /var/lib/spoolq --config /etc/spoolq/spoolq.yaml
SPOOLQ_ROOT=/srv/q spoolq check-config && spoolq serve""")


def checks(settings: Settings, config: ConfigCheck | None = None, *, make_root: bool = False) -> Iterator[Check]:
    """Every check of ``settings``, in order, failures included (see the module doc); ``config``:
    the config check already made (:func:`spoolq.config.check.check`); ``make_root``: make a
    missing root (``serve``) instead of checking that it could be made."""
    from spoolq.config.check import check

    yield Check("ok", f"settings (root={settings.root}, listen {settings.host}:{settings.port}, "
                      f"{settings.workers} workers x {settings.threads} threads, flush={settings.flush or 'auto'}, "
                      f"fsync={'always' if settings.fsync else 'never'})")
    yield flush_check(settings)
    for finding in (config or check(settings)).findings:
        yield Check(finding.status, finding.text, EXIT_CONFIG if finding.failed else EXIT_OK)
    yield connections_check(settings)
    yield from check_root(settings, make=make_root)


def connections_check(settings: Settings) -> Check:
    """The connections each worker will hold at most (``max_connections``, lowered to what the hard
    open-file limit allows, which ``serve`` raises the soft one to) and the head deadline."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = settings.max_connections
    fits = connections_within(wanted, None if hard == resource.RLIM_INFINITY else hard)
    text = (f"connections: each worker holds at most {fits} open, waiting long polls included (over it a new "
            f"one closes the longest idle one, or gets 503); request headers within {settings.header_timeout:g}s")
    if fits < wanted:
        return Check("warning", f"{text}; --max-connections {wanted} lowered to fit the open-file limit ({hard}): "
                                "raise it (LimitNOFILE= in the systemd unit, ulimit -n)")
    return Check("ok", text)


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


def check_root(settings: Settings, *, make: bool = False) -> Iterator[Check]:
    """The root's real state: a writable directory and its headroom. A missing root is made
    when ``make`` (``serve``), else checked to be makeable and left alone (``check-config``)."""
    root = settings.root
    if root.exists() and not root.is_dir():
        yield Check("FAILED", f"root {root} is a file, not a directory", EXIT_ROOT)
        return
    refused = _format_refusal(root) if root.is_dir() else None  # a newer format is left exactly as it is
    if refused is not None:
        yield Check("FAILED", refused, EXIT_ROOT)
        return
    if not root.exists():
        if not make:
            yield _makeable(root)
            return
        try:
            root.mkdir(parents=True)
        except OSError as e:
            yield Check("FAILED", f"root {root} does not exist and cannot be created: {e.strerror or e}"
                                  f"{_ownership_hint(root.parent) if e.errno in (errno.EACCES, errno.EPERM) else ''}",
                        EXIT_ROOT)
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
        hint = _ownership_hint(root) if problem in (errno.EACCES, errno.EPERM) else ""
        yield Check("FAILED", f"root {root} exists but is not writable ({os.strerror(problem)}){hint}", EXIT_ROOT)
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
    yield _headroom_check(settings, headroom(root).describe())


def _headroom_check(settings: Settings, described: str) -> Check:
    """The root's headroom (:mod:`spoolq.observability.readiness`), with the journal's share when it has one."""
    from spoolq.observability.readiness import Headroom, judge, limits_of, root_health

    root = settings.root
    journal = settings.fsync and flush_check(settings).text.startswith("flush=journal")
    health = root_health(root, journal)
    verdict = judge(health, limits_of(settings))
    share = (f"the commit journal takes {health['journal_bytes'] / 2**20:.1f} MiB of the "
             f"{health['journal_limit_bytes'] / 2**20:.1f} MiB it may" if journal else "")
    if verdict.headroom is Headroom.FULL:
        return Check("warning", f"root {root}: {verdict.reason}: /readyz answers 503 and such sends answer 503 "
                                "until space is freed; peeks, polls and acks work" + (f"; {share}" if share else ""))
    if verdict.headroom is Headroom.LOW and verdict.short_of == "inodes":
        return Check("warning", f"root {root}: {described}: fewer than {settings.low_inodes_percent:g}% of its "
                                "inodes are left, and sends answer 503 when none is; make the file system with "
                                "more inodes (mkfs.ext4 -i) or use XFS or btrfs" + (f"; {share}" if share else ""))
    if verdict.headroom is Headroom.LOW:
        return Check("warning", f"root {root}: {described}: less than {settings.low_space_percent:g}% of its file "
                                "system is free (/readyz warns); sends answer 503 once a message of the largest "
                                "accepted size no longer fits" + (f"; {share}" if share else ""))
    if share:
        described += f"; {share}"
    return Check("ok", f"root {root} is writable ({described})")


def _format_refusal(root: Path) -> str | None:
    """Why the store would refuse ``root``'s on-disk format (a newer one), or None."""
    from spoolq.errors import DataFormatRefused
    from spoolq.store.root_format import check_format

    try:
        check_format(root)
    except DataFormatRefused as e:
        return e.message
    return None


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


def _makeable(root: Path) -> Check:
    """Whether ``serve`` could make the missing ``root``: its nearest existing parent is a
    directory this user may write (nothing is made)."""
    parent = root.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return Check("FAILED", f"root {root} does not exist and cannot be created: "
                               f"{os.strerror(errno.ENOTDIR)} ({parent})", EXIT_ROOT)
    if not os.access(parent, os.W_OK | os.X_OK):
        reason = os.strerror(errno.EROFS if _read_only(parent) else errno.EACCES)
        hint = "" if _read_only(parent) else _ownership_hint(parent)
        return Check("FAILED", f"root {root} does not exist and cannot be created in {parent} ({reason}){hint}",
                     EXIT_ROOT)
    return Check("ok", f"root {root} does not exist yet; spoolq serve makes it ({parent} is writable)")


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


#: files that say the process runs in a container (podman, docker)
CONTAINER_MARKERS = (Path("/run/.containerenv"), Path("/.dockerenv"))


def _ownership_hint(path: Path) -> str:
    """Who owns ``path`` and which user spoolq runs as, and how to give it the directory (in a
    container: the volume options that do it)."""
    try:
        owner = path.stat().st_uid
    except OSError:
        return ""
    uid = os.geteuid()
    hint = f": it belongs to uid {owner} and spoolq runs as uid {uid}"
    if any(m.exists() for m in CONTAINER_MARKERS):
        return (f"{hint}: give the host directory mounted at {path} to uid {uid} (chown -R {uid} <host directory>), "
                f"or let podman do it with the volume option :U (-v <host directory>:{path}:U), or with rootless "
                f"podman map your user to it (--userns=keep-id:uid={uid},gid={os.getegid()})")
    return f"{hint}: give it to uid {uid} (chown -R {uid} {path}) or run spoolq as its owner"


def failures(settings: Settings, config: ConfigCheck) -> list[Check]:
    """What ``serve`` refuses to start on (empty: nothing), a missing root made; warnings are
    printed to stderr."""
    failed = []
    for check in checks(settings, config, make_root=True):
        if check.failed:
            failed.append(check)
        elif check.status == "warning":
            print(f"spoolq: warning: {check.text}", file=sys.stderr, flush=True)
    return failed
