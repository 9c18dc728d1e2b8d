"""``spoolq backup DEST`` and ``spoolq restore BACKUP ROOT`` (the method: :mod:`spoolq.backup`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from spoolq.cli_client import CliError
from spoolq.settings import load_settings

BACKUP_DESCRIPTION = """\
Copy the data directory into DEST (a new or empty directory) while the service runs. Messages
are first hard-linked into a snapshot inside the data directory (milliseconds per queue), the
snapshot is checked again for messages that changed state meanwhile, then copied to DEST and
removed. The copy holds every message once; restore it with `spoolq restore`. tmp/, trash/ and
the commit journal are left out (the messages the journal protects are in the copy)."""

RESTORE_DESCRIPTION = """\
Put a backup (or any copy of a data directory, a raw `cp -a` or `tar` of a live one included)
into ROOT, which must be missing or empty; the service for ROOT must be stopped. Before anything
serves it, a message found more than once keeps one copy (acknowledged, else ready, delayed,
claimed), every claim is released (its poller is gone: no message waits for an old visibility
timeout) and one maintenance pass runs. Then start the service on ROOT."""


def add_backup_commands(sub: Any) -> None:
    p = sub.add_parser("backup", help="copy the data directory while the service runs",
                       description=BACKUP_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  spoolq backup /backups/spoolq-$(date +%F) --root /var/lib/spoolq\n"
                              "  SPOOLQ_ROOT=/var/lib/spoolq spoolq backup /mnt/backup/today && "
                              "tar -C /mnt/backup -czf today.tgz today")
    p.add_argument("dest", type=Path, metavar="DEST", help="new or empty directory to copy into")
    p.add_argument("--root", type=Path, help="data directory (default: $SPOOLQ_ROOT or ./data in the checkout)")
    p.set_defaults(handler=run_backup)
    r = sub.add_parser("restore", help="put a backup into an empty data directory, consistent",
                       description=RESTORE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  spoolq restore /backups/spoolq-2026-11-24 /var/lib/spoolq\n"
                              "  spoolq restore ./copy-of-data ./data")
    r.add_argument("backup", type=Path, metavar="BACKUP", help="a directory made by spoolq backup (or a copy of a root)")
    r.add_argument("root", type=Path, metavar="ROOT", help="the data directory to fill (missing or empty)")
    r.set_defaults(handler=run_restore)


def run_backup(args: argparse.Namespace) -> int:
    from spoolq.backup import BackupError, backup

    root = load_settings({"root": args.root}).root
    try:
        report = backup(root, args.dest)
    except BackupError as e:
        raise CliError(str(e), 2) from None
    except OSError as e:
        raise CliError(f"backup failed: {e}", 3) from None
    print(f"backed up {root} to {args.dest}: {report.messages} messages, {report.files} files, "
          f"{report.bytes / 2**20:.1f} MiB (snapshot {report.snapshot_seconds:.2f} s, "
          f"{report.caught_up} caught up)")
    return 0


def run_restore(args: argparse.Namespace) -> int:
    from spoolq.backup import BackupError, restore

    try:
        report = restore(args.backup, args.root)
    except BackupError as e:
        raise CliError(str(e), 2) from None
    except OSError as e:
        raise CliError(f"restore failed: {e}", 3) from None
    for line in report.details[:20]:
        print(f"duplicate: {line}")
    print(f"restored {args.backup} into {args.root}: {report.queues} queues, {report.messages} messages, "
          f"{report.duplicates_removed} duplicate copies removed, {report.claims_released} claims released")
    return 0
