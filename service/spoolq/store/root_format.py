"""The data directory's on-disk format: ``<root>/format``, read before anything else is touched.

A root outlives the code that wrote it, and during a rolling upgrade several versions of spoolq
share one. So the root says which format it is in, and every version checks that first::

    <root>/format        {"features": [...], "format": 2, "written_by": "spoolq 0.2.0"}

* ``format``: an integer, raised only by a change that an older version cannot read or could damage
  (a new meaning for an existing name, a file an older node would misread). A version reads every
  format from 1 up to its own :data:`FORMAT` and refuses a newer one.
* ``features``: names of the on-disk features the root has (see :data:`FEATURES`). A feature an
  older version of the same format does not know is one it can leave alone safely: a new name it
  never lists or never opens. Readers keep unknown features they find, and never refuse a root
  for them.
* ``written_by``: the version that wrote the file, for the operator and the refusal's line.

The file is written whole into ``tmp/``, flushed, renamed over ``format`` and its directory flushed
(:func:`~spoolq.store.fileops.write_json_atomic`), so it is either the old one or the new one,
never torn. One process does it: the one that makes ``tmp/format-<n>.claim`` (``O_EXCL``: one
winner on every file system here, :data:`CLAIM`); a process that finds the claim made serves the
root as it is meanwhile (this version reads every older format), so nodes starting together never
rename over one name at once: on a GlusterFS distributed volume three such renames from three
mounts were seen to hang for good. A claim left by a dead process is swept within the hour
(maintenance's old temp files) and the next start records the format. Readers read ``format`` as
a record other nodes replace (:func:`~spoolq.store.fileops.read_file`: a GlusterFS mount answers
ESTALE for a name another mount replaced, until it looks it up again).

**Formats.**

====  ======================================================================================
1     every root made before the format file existed (spoolq 0.1.0): no ``format`` file
2     spoolq 0.2.0: ``format``; a queue's lock files (``settings.lock``; ``buckets.lock``, or a FIFO
      queue's ``lock``; a dedup queue's ``dedup.lock``: :func:`queue_lock_files`) are made with
      the queue, in its directory before it is renamed into place, and the root's
      ``pollers.lock`` with the root, never "created if missing" by whichever node needs one
      first (a name two nodes make can split on GlusterFS: see :mod:`~spoolq.store.damage`)
====  ======================================================================================

The upgrade from 1 to 2 (:data:`UPGRADES`) makes the lock files every existing queue and the root
lack: what a 0.1.0 node would have made at first use, made once by the upgrading node instead.

**At start** (:func:`check_format`, then :func:`record_format`, both from
:class:`~spoolq.store.filestore.FileStore` as it opens the root):

1. ``format`` is read. A format newer than :data:`FORMAT`, or a file that is not a format record,
   is refused with :class:`~spoolq.errors.DataFormatRefused`, one line naming both formats,
   before the store makes a directory or writes a byte. A file the file system cannot serve
   (GlusterFS answers EIO for a file in split-brain) is refused with the command that shows why.
2. A root without the file is format 1 (a new, empty root too: there is nothing to upgrade).
3. An older root is upgraded in place by the process holding the claim, by the steps of
   :data:`UPGRADES` from its format to :data:`FORMAT`, each idempotent and each safe beside nodes
   of the older version still serving the root; then ``format`` is written. A crash before that
   rename leaves the old format on disk and a later start runs the steps again. A root already at
   :data:`FORMAT` is left as it is.

A read-only root is opened as the format it has (nothing is written; reads still work).

**Older nodes on a format-2 root.** spoolq 0.1.0 never reads ``format`` and never lists the root's
top level, so it leaves the file alone; every other file of format 2 is one that 0.1.0 uses too (it
makes the same lock files when it misses them), so both serve one root during an upgrade. A queue
that a 0.1.0 node creates has no lock files made with it: they are made at their first use, as
0.1.0 does (the lock modules open them with ``O_CREAT``, which creates nothing where they exist).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spoolq import __version__
from spoolq.errors import DataFormatRefused, storage_error
from spoolq.store import bucket_guard, damage, markerlock
from spoolq.store.fileops import TempWriter, listdir, read_file, read_json, write_json_atomic
from spoolq.store.model import QueueKind

#: the format this version writes, and the newest it reads
FORMAT = 2
#: a root without a ``format`` file: every root made before the file existed
UNRECORDED = 1
#: the file at the root that holds the format
FORMAT_FILE = "format"
#: made (O_EXCL) by the one process that records format ``{}`` (see the module docstring); a claim
#: left by a dead process is swept with the root's old temp files (maintenance.TMP_MAX_AGE)
CLAIM = "tmp/format-{}.claim"
#: the features of a root this version writes (see the module docstring): ``lock-files-made-once``
#: (format 2's lock files), ``topics`` (``<root>/topics/``: SNS topics, :mod:`spoolq.topics.catalog`, a
#: top-level directory no older version lists or opens)
FEATURES: tuple[str, ...] = ("lock-files-made-once", "topics")


@dataclass(frozen=True)
class RootFormat:
    """A root's format as found (or as written)."""

    format: int
    features: tuple[str, ...]
    written_by: str | None  # None: no ``format`` file (format 1)

    @property
    def recorded(self) -> bool:
        """Whether the root has a ``format`` file (format 1 has none)."""
        return self.written_by is not None


def current() -> RootFormat:
    """The format this version writes."""
    return RootFormat(FORMAT, FEATURES, f"spoolq {__version__}")


def _refused(root: Path, why: str) -> DataFormatRefused:
    return DataFormatRefused(f"the data directory {root} {why}; nothing was changed")


def check_format(root: Path) -> RootFormat:
    """The format of ``root`` as it is on disk, refusing what this version cannot open; reads one
    file and writes nothing. A missing root (made by the caller) is format :data:`UNRECORDED`."""
    path = root / FORMAT_FILE
    try:
        # replaced whole by other nodes: a GlusterFS mount may answer ESTALE until it looks it up again
        raw = read_file(str(path), replaced=True)
    except (FileNotFoundError, NotADirectoryError):  # no root yet (or no directory: the caller says so)
        if os.path.lexists(path):  # stale through this mount longer than read_file waits: not "missing"
            raise storage_error(OSError(errno.ESTALE, "Stale file handle"), f"reading {path}") from None
        return RootFormat(UNRECORDED, (), None)
    except OSError as e:
        if damage.is_damage(e):
            damage.report(str(path), "reading the on-disk format")
            raise DataFormatRefused(f"storage unavailable while reading {path}: EIO (the file system cannot serve "
                                    f"it): {damage.fix_for(str(path))}") from e
        raise storage_error(e, f"reading {path}") from e
    found = _parse(raw)
    if found is None:
        raise _refused(root, f"has a {FORMAT_FILE} file this spoolq {__version__} cannot read "
                             f"(it reads on-disk formats {UNRECORDED} to {FORMAT})")
    if found.format > FORMAT:
        raise _refused(root, f"is in on-disk format {found.format} (written by {found.written_by}); this spoolq "
                             f"{__version__} reads formats {UNRECORDED} to {FORMAT}: run a spoolq that reads "
                             f"format {found.format}")
    return found


def _parse(raw: bytes) -> RootFormat | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    number, features, by = value.get("format"), value.get("features", []), value.get("written_by", "?")
    if type(number) is not int or number < 1 or not isinstance(features, list) or not isinstance(by, str):
        return None
    if not all(isinstance(f, str) for f in features):
        return None
    return RootFormat(number, tuple(features), by or "?")


def _is_current(fmt: RootFormat) -> bool:
    return fmt.format == FORMAT and fmt.recorded and set(FEATURES) <= set(fmt.features)


def _record(fmt: RootFormat) -> dict[str, Any]:
    return {"format": fmt.format, "features": list(fmt.features), "written_by": fmt.written_by}


#: the root's poll-lane lock (cursor.py's ``HomeLane``), made with the root
POLLERS_LOCK = "pollers.lock"


def queue_lock_files(kind: QueueKind) -> tuple[str, ...]:
    """The lock files a queue of ``kind`` is made with (format 2): its settings lock, the FIFO
    queue lock or the bucket lock (bucket_guard.py), and a dedup queue's marker lock."""
    if kind is QueueKind.FIFO:
        return ("settings.lock", "lock")
    if kind is QueueKind.DEDUP:
        return ("settings.lock", bucket_guard.LOCK_FILE, markerlock.LOCK_FILE)
    return ("settings.lock", bucket_guard.LOCK_FILE)


def make_lock_files(directory: str, names: tuple[str, ...]) -> None:
    """Make the empty lock files ``names`` in ``directory``, keeping any that exist; one the file
    system refuses (EIO) is reported and left (its users go round it, or answer 503 naming it)."""
    for name in names:
        try:
            os.close(os.open(f"{directory}/{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            pass
        except OSError as e:
            if not damage.is_damage(e):
                raise
            damage.report(f"{directory}/{name}", "making a lock file")


def _lock_files_made_once(root: Path) -> None:
    """Format 1 to 2: the root's poll-lane lock and every queue's lock files, made once here rather
    than by whichever node first needs one (the name two nodes may both make, which GlusterFS can
    split: see damage.py). A queue an older node makes meanwhile gets its lock files at first use."""
    make_lock_files(str(root), (POLLERS_LOCK,))
    queues = root / "queues"
    for name in listdir(str(queues)):
        if name.startswith("."):  # a queue being made or deleted (catalog.py, deleting.py)
            continue
        meta = read_json(queues / name / "meta.json", present=True)
        kind = meta.get("kind") if meta else None
        if kind in {k.value for k in QueueKind}:
            with suppress(FileNotFoundError):  # deleted meanwhile
                make_lock_files(str(queues / name), queue_lock_files(QueueKind(kind)))


#: the in-place steps from one format to the next: ``UPGRADES[n]`` takes a root from ``n`` to
#: ``n + 1``; each is idempotent and safe while nodes of format ``n`` still serve the root
UPGRADES: Mapping[int, Callable[[Path], None]] = {1: _lock_files_made_once}


def record_format(root: Path, found: RootFormat, tmp: TempWriter) -> RootFormat:
    """Bring ``root`` (whose format :func:`check_format` found) to :data:`FORMAT` and record it;
    the root's directories exist. Returns the format the root is in now: ``found`` unchanged if
    the root cannot be written (read-only), so reads still work. The record is flushed whatever the
    store's own flush setting: a store that never flushes may lose messages in a power cut, but a
    torn record would leave a root no version opens."""
    if _is_current(found):
        return found
    claim = root / CLAIM.format(FORMAT)
    try:
        try:
            os.close(os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return found  # another process records it now: this one serves the root as it is meanwhile
        try:
            now = _upgrade(root, found, tmp)
        finally:
            with suppress(OSError):
                os.unlink(claim)
    except OSError as e:
        if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return found
        if damage.is_damage(e):
            damage.report(str(claim), "recording the on-disk format")
            return found
        raise storage_error(e, f"recording the on-disk format of {root}") from e
    check_format(root)  # refuses the root if a newer version recorded its format at the same moment
    return now


def _upgrade(root: Path, found: RootFormat, tmp: TempWriter) -> RootFormat:
    """The steps from ``found`` to :data:`FORMAT`, then the record (under the claim)."""
    for step in range(found.format, FORMAT):
        upgrade = UPGRADES.get(step)
        if upgrade is not None:
            upgrade(root)
    again = check_format(root)
    if _is_current(again):  # recorded by a process that held the claim just before this one
        return again
    # features an older or newer version of this format recorded and this one does not know: kept
    kept = tuple(f for f in found.features if f not in FEATURES)
    now = RootFormat(FORMAT, FEATURES + kept, f"spoolq {__version__}")
    write_json_atomic(root / FORMAT_FILE, _record(now), tmp, True)
    return now
