"""``spoolq backup DEST`` and ``spoolq restore BACKUP ROOT``: a copy taken while serving, and a
restore that starts clean.

Why not ``cp -a`` or ``tar`` of a live root: every state change of a message is a rename, and a
tree walk that meets a message twice (before and after its rename) copies it twice, while one
that misses it (renamed from a directory not yet copied into one already copied) loses it.

**Backup** (the service keeps running):

1. *Snapshot by hard links*, inside the root (same file system, no data copied, so the walk
   takes milliseconds per queue): every file under ``queues/``, ``archive/``, ``moves/``,
   ``corrupt/`` and ``topics/`` (SNS topics, subscriptions and the signing key) is linked into ``<root>/backup-snapshot/<stamp>/``. Message files are never
   rewritten (a state change renames the same inode), so a link is the message, whatever
   happens to it later.
   The snapshot remembers the inode of every message file it linked: a message renamed from a
   directory already walked into one not walked yet (a claim released back to ``ready/`` while
   the walk is between ``claimed/`` and ``ready/``) is met twice and linked once.
2. *Catch-up scans*: a message renamed from a directory not yet linked into one already linked
   was missed. A live message file whose inode the snapshot does not hold was missed (or sent
   since): each queue is scanned again, and such files linked, until a scan finds none (at most
   :data:`CATCH_UP_SCANS` per queue, then one scan of every queue). A message is only missed if
   it changes state twice, both times into a directory already scanned, within one scan of its
   queue; and it is never linked twice.
3. *Copy* the snapshot to ``DEST``, then remove it. The copy is flushed by one ``syncfs`` of
   ``DEST``'s file system, or, on a network or FUSE file system, by an fsync of every file and
   directory (:func:`spoolq.store.filesystems.sync_local_file_system`).

The root's ``format`` file (its on-disk format) is copied too, and a restore refuses a backup in
a newer format than it reads before it copies anything. ``tmp/`` (partial writes), ``trash/`` and
``journal/`` are left out. The journal is the running
node's power-failure log: the message files it protects are in the snapshot already (read
through the page cache), and replaying it into a restored root would bring back messages
acknowledged since.

**Restore** (the service for that root is stopped; ``ROOT`` missing or empty): the backup (or
any copy of a root, a raw ``cp -a`` or ``tar`` of a live one included) is copied into ``ROOT``
and made consistent before anything serves it:

* a message present more than once in a queue (ready and claimed, say, from a raw copy) keeps
  one copy: acknowledged (``acked/``) wins, then ready, delayed, claimed;
* claims are released (the pollers that held them do not exist any more): no message waits for
  an old visibility timeout;
* one maintenance pass (due delays, expired retention, sweeps).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spoolq.cli.command import CliError, Command
from spoolq.errors import DataFormatRefused
from spoolq.settings.server import load_settings
from spoolq.store.root_format import FORMAT_FILE, check_format

#: directories of the root that a backup holds (the rest is rebuilt or swept)
KEPT = ("queues", "archive", "moves", "corrupt", "topics")
SNAPSHOT_DIR = "backup-snapshot"
#: catch-up scans of one queue before going on (each usually finds nothing)
CATCH_UP_SCANS = 5
#: bytes read and written at a time when copying a file
COPY_CHUNK = 1 << 20
#: a message file's name: its 40-hex id, then ``~`` and the state's fields
_MESSAGE = re.compile(r"^([0-9a-f]{40})~")
_STATES = ("ready", "delayed", "claimed")


class BackupError(Exception):
    """A backup or restore that cannot run; the message says why."""


@dataclass
class BackupReport:
    snapshot_seconds: float = 0.0
    files: int = 0
    messages: int = 0
    caught_up: int = 0  # message files linked by the catch-up scans
    bytes: int = 0


@dataclass
class RestoreReport:
    queues: int = 0
    messages: int = 0
    duplicates_removed: int = 0
    claims_released: int = 0
    details: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ backup


def backup(root: Path, dest: Path) -> BackupReport:
    """Copy the live store at ``root`` into the new directory ``dest`` (see the module doc)."""
    root, dest = Path(root), Path(dest)
    if not (root / "queues").is_dir():
        raise BackupError(f"{root} is not a spoolq root (no queues/ directory)")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty directory")
    if _inside(dest, root):
        raise BackupError(f"{dest} is inside the root {root}")
    try:
        check_format(root)  # a root in a newer on-disk format is left as it is: no snapshot made in it
    except DataFormatRefused as e:
        raise BackupError(e.message) from None
    report = BackupReport()
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    snap = root / SNAPSHOT_DIR / stamp
    snap.mkdir(parents=True)
    try:
        started = time.monotonic()
        _snapshot(root, snap, report)
        if (root / FORMAT_FILE).exists():  # the on-disk format the copy is in (replaced whole, never edited)
            os.link(root / FORMAT_FILE, snap / FORMAT_FILE)
        report.snapshot_seconds = time.monotonic() - started
        _copy_tree(snap, dest, report)
    finally:
        shutil.rmtree(snap, ignore_errors=True)
        try:
            (root / SNAPSHOT_DIR).rmdir()
        except OSError:
            pass
    return report


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _snapshot(root: Path, snap: Path, report: BackupReport) -> None:
    held: set[int] = set()  # inodes of the message files linked so far
    for top in KEPT:
        if top == "queues":
            continue
        for rel, inode in _files(root, top):
            _link(root, snap, rel, report, held, inode)
    for qdir in sorted(_listdir(root / "queues")):
        queue = f"queues/{qdir}"
        for rel, inode in _files(root, queue):
            _link(root, snap, rel, report, held, inode)
        for _ in range(CATCH_UP_SCANS):
            if not _catch_up(root, snap, queue, report, held):
                break
    for qdir in sorted(_listdir(root / "queues")):
        _catch_up(root, snap, f"queues/{qdir}", report, held)


def _catch_up(root: Path, snap: Path, queue: str, report: BackupReport, held: set[int]) -> int:
    """Link the message files of ``queue`` whose inode the snapshot does not hold."""
    linked = 0
    for state in _STATES:
        for rel, inode in _files(root, f"{queue}/{state}"):
            if inode not in held and _MESSAGE.match(os.path.basename(rel)) and \
                    _link(root, snap, rel, report, held, inode):
                linked += 1
    report.caught_up += linked
    return linked


def _is_message(rel: str) -> bool:
    return bool(_MESSAGE.match(os.path.basename(rel))) and any(f"/{s}/" in rel for s in _STATES)


def _link(root: Path, snap: Path, rel: str, report: BackupReport, held: set[int], inode: int) -> bool:
    """Link ``root/rel`` (inode ``inode``) into the snapshot; a message file only if its inode is
    not there yet."""
    message = _is_message(rel)
    if message and inode in held:
        return False  # met again under its next state's name
    source, target = f"{root}/{rel}", f"{snap}/{rel}"
    try:
        os.link(source, target)
    except FileNotFoundError:
        if not os.path.lexists(source):
            return False  # renamed or removed since it was listed: a later scan sees it where it went
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            os.link(source, target)
        except FileNotFoundError:
            return False
    except FileExistsError:
        return False
    report.files += 1
    if message:
        held.add(inode)
        report.messages += 1
    return True


def _files(root: Path, top: str) -> Iterator[tuple[str, int]]:
    """(path relative to ``root``, inode number) of every regular file under ``root/top``, each
    directory in name order. The inode comes with the directory listing (no ``stat`` per file: a
    name always names the same message file, which is never rewritten)."""
    try:
        with os.scandir(f"{root}/{top}") as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    subdirectories = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            subdirectories.append(entry.name)
        elif entry.is_file(follow_symlinks=False):
            yield f"{top}/{entry.name}", entry.inode()
    for name in subdirectories:
        yield from _files(root, f"{top}/{name}")


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except FileNotFoundError:
        return []


def _copy_tree(src: Path, dest: Path, report: BackupReport | None = None) -> None:
    """Copy ``src`` into ``dest`` (created), durable when this returns: on a local file system the
    files are written and then one ``syncfs`` of ``dest``'s file system flushes them all (an fsync
    of each file costs a journal commit each: hours for millions of messages); on a network or FUSE
    file system, whose syncfs may not reach the servers, every file and directory is fsync'd."""
    from spoolq.store.filesystems import sync_local_file_system

    dest.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        out = f"{dest}/{rel}" if rel != "." else str(dest)
        for d in dirnames:
            os.mkdir(f"{out}/{d}")
        for name in filenames:
            copied = _copy_file(f"{dirpath}/{name}", f"{out}/{name}")
            if report is not None:
                report.bytes += copied
    if sync_local_file_system(dest):
        return
    for dirpath, _dirnames, filenames in os.walk(dest, topdown=False):
        for name in filenames:
            _fsync(os.path.join(dirpath, name), os.O_RDONLY)
        _fsync(dirpath, os.O_RDONLY | os.O_DIRECTORY)


def _copy_file(source: str, target: str) -> int:
    """Copy one file with its permission bits and times (a FIFO queue's dedup window reads a
    record's mtime); the bytes copied."""
    fd = os.open(source, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o7777)
        try:
            while chunk := os.read(fd, COPY_CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        finally:
            os.close(out)
    finally:
        os.close(fd)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    return st.st_size


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ restore


def restore(backup_dir: Path, root: Path) -> RestoreReport:
    """Copy ``backup_dir`` into the missing or empty ``root`` and make it consistent."""
    backup_dir, root = Path(backup_dir), Path(root)
    if not (backup_dir / "queues").is_dir():
        raise BackupError(f"{backup_dir} is not a spoolq backup (no queues/ directory)")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise BackupError(f"{root} exists and is not empty: stop the service and move the old root away first")
    try:
        check_format(backup_dir)  # a backup in a newer on-disk format is refused before anything is copied
    except DataFormatRefused as e:
        raise BackupError(e.message) from None
    for top in KEPT:
        if (backup_dir / top).is_dir():
            _copy_tree(backup_dir / top, root / top)
    if (backup_dir / FORMAT_FILE).is_file():
        shutil.copy2(backup_dir / FORMAT_FILE, root / FORMAT_FILE)
    report = RestoreReport()
    for qdir in sorted(_listdir(root / "queues")):
        report.queues += 1
        _one_copy_per_message(root / "queues" / qdir, report)
    _release_claims_and_maintain(root, report)
    return report


def _one_copy_per_message(qpath: Path, report: RestoreReport) -> None:
    """Keep one file per message id in the queue: acked, else ready, else delayed, else claimed."""
    copies: dict[str, list[tuple[int, Path]]] = {}
    rank = {"acked": 0, "ready": 1, "delayed": 2, "claimed": 3}
    for state, order in rank.items():
        for dirpath, _dirnames, filenames in os.walk(qpath / state):
            for name in filenames:
                m = _MESSAGE.match(name)
                if m is not None:
                    copies.setdefault(m.group(1), []).append((order, Path(dirpath) / name))
    for mid, found in copies.items():
        found.sort()
        if found[0][0] != 0:
            report.messages += 1
        for _order, extra in found[1:]:
            extra.unlink()
            report.duplicates_removed += 1
            report.details.append(f"{qpath.name}: {mid} was in {len(found)} places; kept {found[0][1].parent.name}")


def _release_claims_and_maintain(root: Path, report: RestoreReport) -> None:
    from spoolq.store import FileStore

    store = FileStore(root, node_id="restore")
    try:
        for queue in store.list_queues():
            claimed = store.claim_count(queue)
            if claimed:
                store.unclaim_all(queue)
                report.claims_released += claimed
        store.maintain()
        store.flush()
    finally:
        store.close()


# --- the commands ------------------------------------------------------------------------------

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


def _backup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dest", type=Path, metavar="DEST", help="new or empty directory to copy into")
    p.add_argument("--root", type=Path, help="data directory (default: $SPOOLQ_ROOT, else the one spoolq serve uses: /var/lib/spoolq for "
                        "root and systemd, ~/.local/share/spoolq for a user)")


def _restore_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("backup", type=Path, metavar="BACKUP", help="a directory made by spoolq backup (or a copy of a root)")
    r.add_argument("root", type=Path, metavar="ROOT", help="the data directory to fill (missing or empty)")


def run_backup(args: argparse.Namespace) -> int:
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


BACKUP = Command("backup", "copy the data directory while the service runs", _backup_arguments, run_backup,
                 description=BACKUP_DESCRIPTION, examples="""
spoolq backup /backups/spoolq-$(date +%F) --root /var/lib/spoolq
SPOOLQ_ROOT=/var/lib/spoolq spoolq backup /mnt/backup/today && tar -C /mnt/backup -czf today.tgz today""")
RESTORE = Command("restore", "put a backup into an empty data directory, consistent", _restore_arguments,
                  run_restore, description=RESTORE_DESCRIPTION, examples="""
spoolq restore /backups/spoolq-2026-11-24 /var/lib/spoolq
spoolq restore ./copy-of-data ./data""")
