"""Replaying the commit journals of dead processes into the queues (``flush="journal"``).

A journaled send is durable once its journal record is; the message file itself may have been
torn or lost by a power failure. :func:`recover_journals`, at start-up and in every maintenance
pass, takes this node's journal files (:mod:`spoolq.store.journal` names them) that no live process
writes, under an flock on ``journal/.lock``:

* **Written through another instance of the file system** (an earlier boot, or the file system
  unmounted and mounted again since, or a kernel without unique mount ids): the page cache that
  held the dead process's renames and message files is gone, so the file is **replayed**. A send
  record older than the newest mark of its instance (``<boot>~<instance>~<ns>.synced``) is skipped:
  a completed syncfs put its message on the disk, and whatever happened to the message since (an
  ack, a move, a dead letter) stands. Any other send record is looked for: a message whole in its
  queue (ready, claimed, delayed, acked into the archive) is left alone, a torn copy is rewritten
  in place; a message a transfer took elsewhere (the ``M`` records of every journal file, followed
  from queue to queue) is looked for there the same way, and a pending copy of its body in a dedup
  queue it was moved into counts as found; a message found nowhere is written back under its
  original ready name. Then one syncfs, and the files are deleted (and that deletion flushed: a
  replayed file is not replayed again after a second failure).
* **Written through this instance by a process that died** (``kill -9``): the page cache survived,
  so nothing is replayed; one syncfs makes its renames durable, then the files are deleted.

What a replay can still undo: an ack (acks are never flushed), a purge or a release, of a message
sent in the last seconds before the failure (its record not yet covered by a mark): one more
delivery, which at-least-once allows. It never writes back a message that a flushed move, or any
dead letter, took to another queue. At-most-once messages, FIFO and dedup queues never use the
journal (their sends take the full flush), so a replay cannot deliver them twice or break their
order or dedup state.

A file's replay reads its records from the start and ends at the first that is not whole: the
zeros past the last record of a prepared file, a torn record (power failed during a write that was
never fdatasync'd, so never acknowledged), or the end of an appended file; both kinds of file, and
files of the older record format, are read alike (:mod:`spoolq.store.journal` says why nothing
acknowledged can lie past that point). A prepared file that never took a record replays as empty.
Marks of instances with no journal file left are deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from spoolq.errors import SpoolqError, storage_error
from spoolq.store import layout as L
from spoolq.store.catalog import QueueCatalog
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.fileops import TempWriter, fsync_dir, listdir, read_file, read_json_listed, rename_into
from spoolq.store.group_commit import GroupCommit
from spoolq.store.journal import MARK_SUFFIX, MOVED, SEND, decode_records
from spoolq.store.model import QueueKind

#: where a transfer took a message: (queue directory, id) -> (queue directory, new id)
Moves = Mapping[tuple[str, str], tuple[str, str]]


@dataclass(frozen=True)
class JournalName:
    """A journal file's name: ``<node>~<boot>~<instance>~<pid>~<n>.jnl`` (older files have no
    instance: ``<node>~<boot>~<pid>~<n>.jnl``, replayed as if of another instance)."""

    node: str
    boot: str
    instance: str | None
    pid: int

    @staticmethod
    def parse(name: str) -> JournalName | None:
        parts = name[:-4].split("~") if name.endswith(".jnl") else []
        if len(parts) == 5 and parts[3].isdigit():
            return JournalName(parts[0], parts[1], parts[2], int(parts[3]))
        if len(parts) == 4 and parts[2].isdigit():
            return JournalName(parts[0], parts[1], None, int(parts[2]))
        return None


def _pid_alive(pid: int) -> bool:
    return pid == os.getpid() or os.path.exists(f"/proc/{pid}")


def recover_journals(catalog: QueueCatalog, commit: GroupCommit, tmp: TempWriter) -> tuple[int, int]:
    """Replay or retire this node's commit journals that no live process writes (see the module
    docstring): (files retired, messages restored)."""
    j = commit.journal
    if j is None:
        return 0, 0
    try:
        return recover(str(catalog.root / "journal"), j.node, j.boot, j.instance(), commit.syncfs_now,
                       lambda rel, data, moves: restore_journaled(catalog, tmp, rel, data, moves))
    except OSError as e:
        raise storage_error(e, "recovering the commit journal") from e


def recover(jdir: str, node: str, boot: str, instance: str, syncfs: Callable[[], None],
            restore: Callable[[str, bytes, Moves], bool]) -> tuple[int, int]:
    """The journal files of ``jdir`` as the module docstring says; ``restore(rel_path, data,
    moves)`` puts one message back if it is missing or torn (True if it did)."""
    names = listdir(jdir)
    journals = {n: JournalName.parse(n) for n in names}
    replay: list[str] = []
    retire: list[str] = []
    for n, jn in journals.items():
        if jn is None or jn.node != node:
            continue
        if jn.boot != boot:
            replay.append(n)  # an earlier boot: nobody of it is alive
        elif _pid_alive(jn.pid):
            continue
        elif jn.instance == instance and not instance.startswith("p"):
            retire.append(n)  # same page cache: it has every rename and message file
        else:
            replay.append(n)
    if not replay and not retire:
        _drop_stale_marks(jdir, names, journals, boot, instance)
        return 0, 0
    lock_fd = os.open(f"{jdir}/.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        names = listdir(jdir)  # another process may have done it meanwhile
        covered = _marks(names)
        moves = _moves(jdir, [n for n in names if n.endswith(".jnl")]) if replay else {}
        done: list[str] = []
        restored = 0
        for n in sorted(replay):
            jn = journals[n]
            assert jn is not None
            try:
                with open(f"{jdir}/{n}", "rb") as f:
                    blob = f.read()
            except FileNotFoundError:
                continue
            upto = covered.get((jn.boot, jn.instance)) if jn.instance is not None else None
            for rec in decode_records(blob):
                if rec.kind != SEND or (upto is not None and rec.appended_ns is not None and rec.appended_ns < upto):
                    continue
                restored += restore(rec.path, rec.data, moves)
            done.append(n)
        done += [n for n in retire if n in names]
        if done:
            syncfs()
            for n in done:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{jdir}/{n}")
            fsync_dir(jdir)
        names = listdir(jdir)
        _drop_stale_marks(jdir, names, {n: JournalName.parse(n) for n in names}, boot, instance)
        return len(done), restored
    finally:
        os.close(lock_fd)


def _marks(names: list[str]) -> dict[tuple[str, str], int]:
    """(boot, instance) -> start of the latest completed syncfs of that instance (see journal.py)."""
    covered: dict[tuple[str, str], int] = {}
    for n in names:
        parts = n[:-len(MARK_SUFFIX)].split("~") if n.endswith(MARK_SUFFIX) else []
        if len(parts) == 3 and parts[2].isdigit():
            key = (parts[0], parts[1])
            covered[key] = max(covered.get(key, 0), int(parts[2]))
    return covered


def _drop_stale_marks(jdir: str, names: list[str], journals: Mapping[str, JournalName | None], boot: str,
                      instance: str) -> None:
    """Delete the marks of instances that have no journal file left (but this process's own: it
    replaces those itself). A mark only ever covers records of files that exist when it is made."""
    alive = {(jn.boot, jn.instance) for jn in journals.values() if jn is not None}
    for n in names:
        parts = n[:-len(MARK_SUFFIX)].split("~") if n.endswith(MARK_SUFFIX) else []
        if len(parts) == 3 and (parts[0], parts[1]) not in alive and (parts[0], parts[1]) != (boot, instance):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{jdir}/{n}")


def _moves(jdir: str, files: list[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """Every transfer the journal files record (of any node or process, live or dead)."""
    moves: dict[tuple[str, str], tuple[str, str]] = {}
    for n in files:
        try:
            with open(f"{jdir}/{n}", "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            continue
        for rec in decode_records(blob):
            if rec.kind == MOVED:
                to = rec.data.decode(errors="replace").split("/")
                parts = rec.path.split("/")
                if len(to) == 2 and len(parts) >= 3:
                    moves[(parts[0], L.name_id(parts[-1]))] = (to[0], to[1])
    return moves


def restore_journaled(catalog: QueueCatalog, tmp: TempWriter, rel: str, data: bytes, moves: Moves) -> bool:
    """Put a journaled message back at ``queues/<rel>`` unless it is whole in its queue or where
    transfers took it (a torn copy found on the way gets the journaled bytes)."""
    parts = rel.split("/")
    mid = L.name_id(parts[-1])
    if len(parts) < 3 or ".." in parts or not L.ID_RE.match(mid):
        return False
    qpath = f"{catalog.queues_dir}/{parts[0]}"
    if not os.path.exists(f"{qpath}/meta.json"):
        return False  # the queue was deleted since
    dirs = [os.path.dirname(f"{catalog.queues_dir}/{rel}"), f"{qpath}/claimed/{L.id_shard(mid)}", f"{qpath}/acked"]
    dirs += [f"{qpath}/delayed/{b}" for b in listdir(f"{qpath}/delayed")]
    found = _look_in(tmp, dirs, mid, data)
    hop, seen = moves.get((parts[0], mid)), set()
    while found is None and hop is not None and hop not in seen:
        seen.add(hop)
        found = _look_at_destination(catalog, tmp, hop[0], hop[1], data)
        hop = moves.get(hop)
    if found is not None:
        return found
    rename_into(tmp.write(data), os.path.dirname(f"{catalog.queues_dir}/{rel}"), parts[-1], base=qpath)
    return True


def _look_in(tmp: TempWriter, dirs: list[str], mid: str, data: bytes) -> bool | None:
    """Message ``mid`` in one of ``dirs``: False if whole, True if it was torn and got ``data``,
    None if it is not there."""
    prefix = f"{mid}~"
    for d in dirs:
        for n in listdir(d):
            if n.startswith(prefix):
                try:
                    decode_message(read_file(f"{d}/{n}"))
                    return False  # whole: nothing to do
                except CorruptMessage:
                    os.replace(tmp.write(data), f"{d}/{n}")  # torn by the power failure
                    return True
                except FileNotFoundError:
                    continue
    return None


def _look_at_destination(catalog: QueueCatalog, tmp: TempWriter, qdir: str, mid: str, data: bytes) -> bool | None:
    """The moved message ``mid`` in the queue of directory ``qdir`` (as :func:`_look_in`); a pending
    copy of its body in a dedup queue (which a move collapsed it into) counts as whole."""
    name = (read_json_listed(Path(catalog.queues_dir) / qdir / "meta.json") or {}).get("name")
    try:
        q = catalog.find(name) if isinstance(name, str) else None
    except SpoolqError:
        q = None
    if q is None or not L.ID_RE.match(mid):
        return None
    unclaimed = q.locate_unclaimed(mid)
    claimed = q.locate_claimed(L.Ref(id=mid))
    dirs = [unclaimed[0]] if unclaimed else []
    dirs += [os.path.dirname(claimed[0])] if claimed else []
    found = _look_in(tmp, [*dirs, q.sub("acked")], mid, data)
    if found is None and q.kind is QueueKind.DEDUP:
        with contextlib.suppress(CorruptMessage):
            if q.pending_copy(q.dedup_marker(decode_message(data)[1])) is not None:
                return False
    return found
