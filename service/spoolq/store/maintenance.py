"""Maintenance: claim expiry, due delays, retention, dedup-window sweep, idle FIFO groups, empty
buckets where their removal is guarded (GlusterFS: :func:`remove_empty_buckets`), trash and temp sweep, old dead-letter origin markers (:meth:`~spoolq.store.handle.QueueHandle.prune_origins`).

Every step is a set of renames or unlinks that is safe to run from any number of
processes and nodes at once: the loser of a race gets ENOENT and moves on. Each step
reads only directories whose names say there is work (expired claim buckets are the
exception: claims are found by listing the in-flight set, whose size is bounded by
what consumers hold, not by queue depth).

Background passes are shared. Every process on a root (each gunicorn worker, the Disque door,
every node) runs one each interval, but a queue is maintained by one of them per interval:
a pass first looks at the mtime of the queue's directory, set to the store-clock time of the
last background pass over that queue by anyone (nothing else reads it; creating or removing a
state directory in the queue directory also sets it, which only delays a pass by one interval),
skips the queue if that is less than an interval ago, and otherwise stamps it and does the work. Two processes that look at the same moment
both do it, which is harmless. Without this a queue cost about twenty directory listings per
second per process; on a distributed file system, where every listing asks every brick, six
processes' passes kept the bricks busy enough to stall requests. Polls still run a queue's
maintenance themselves when they find nothing (:meth:`Maintenance.maybe`), so an expired claim is
not left waiting for its turn.

Each step is a function given what it works on (a queue's handle, the trash, a directory);
:class:`Maintenance`, built by the store with its queues, trash, wake-ups, archive and clock,
runs them: a queue's steps (:meth:`Maintenance.queue`, and :meth:`Maintenance.maybe` for a poll),
and the whole pass (:meth:`Maintenance.run`), which also runs the steps of other parts of the store
that it is handed (taking over stale moves, recovering commit journals, finishing deletions).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path

from spoolq.store import bucket_guard
from spoolq.store import layout as L
from spoolq.store.archive import Archive
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.cursor import REFILL_TARGET
from spoolq.store.deleting import sweep_deleting
from spoolq.store.fileops import GONE, listdir, rename_into
from spoolq.store.handle import QueueHandle
from spoolq.store.model import FIFO_DEDUP_WINDOW, QueueKind
from spoolq.store.trash import Trash
from spoolq.store.watch import Watcher

#: temp files of a live writer on another node are left alone this long
TMP_MAX_AGE = 3600.0
#: a queue being created is staged for milliseconds; one this old was left by a crash
STAGING_MAX_AGE = 60.0
#: a FIFO group's directories are removed once both are empty and unchanged this long (seconds)
GROUP_IDLE = 60.0
#: empty buckets one guarded pass removes at most (it holds the bucket lock meanwhile)
REMOVALS_PER_PASS = 1000


def expire_claims(q: QueueHandle, now_ms: int, trash: Trash) -> int:
    """Requeue expired claims. A claim whose message is still ready under its name from before
    that claim (a second copy: a raw copy of a live root, a crash between the two halves of the
    claim on a shared file system) is dropped instead, so one copy stays: one ``stat``, and only if
    that finds the copy, a listing of its bucket to confirm it (on GlusterFS a stat may be answered
    from the mount's cache for about a second after another node claimed the message away from
    that name, and the claim would be dropped: a message lost). The renames back into the buckets
    hold the bucket lock where it is used (bucket_guard.py), taken at the first one, and take two
    steps on ``ceph-fuse`` (:meth:`~spoolq.store.handle.QueueHandle.requeue`)."""
    with contextlib.ExitStack() as returning:
        return _expire_claims(q, now_ms, trash, returning)


def _expire_claims(q: QueueHandle, now_ms: int, trash: Trash, returning: contextlib.ExitStack) -> int:
    requeued = 0
    locked = False
    for shard in listdir(q.sub("claimed")):
        sdir = q.sub(f"claimed/{shard}")
        for n in listdir(sdir):
            p = L.parse_claimed(n)
            if p is None or p.expires > now_ms:
                continue
            bucket = shard if q.kind is QueueKind.FIFO else L.std_bucket(L.id_time_ms(p.id))
            ready_dir = q.ready_dir(bucket)
            before = L.ready_name(p.id, p.rc - 1, p.frt if p.rc > 1 else 0)
            if p.rc >= 1 and os.path.exists(f"{ready_dir}/{before}") and before in listdir(ready_dir):
                with contextlib.suppress(FileNotFoundError):
                    trash.discard(f"{sdir}/{n}")
                continue
            if not locked:
                returning.enter_context(q.renaming_into_buckets())
                locked = True
            try:
                q.requeue(f"{sdir}/{n}", p, q.ready_dir(bucket), now_ms)
                requeued += 1
            except FileNotFoundError:
                continue
    return requeued


def release_due(q: QueueHandle, now_ms: int) -> int:
    released = 0
    now_s = now_ms // 1000
    due = [b for b in sorted(listdir(q.sub("delayed"))) if b.isdigit() and int(b) <= now_s]
    if not due:
        return 0
    with q.renaming_into_groups(), q.renaming_into_buckets():
        for b in due:
            bdir = q.sub(f"delayed/{b}")
            for n in listdir(bdir):
                p = L.parse_delayed(n)
                if p is None or p.due > now_ms:
                    continue
                try:
                    rename_into(f"{bdir}/{n}", q.ready_dir(p.bucket), L.ready_name(p.id, p.rc, p.frt), base=q.path)
                    released += 1
                except FileNotFoundError:
                    continue
            if not q.guarded_buckets or q.kind is QueueKind.FIFO:  # guarded: remove_empty_buckets
                with contextlib.suppress(OSError):
                    os.rmdir(bdir)
    return released


def remove_idle_groups(q: QueueHandle, now: float) -> int:
    """FIFO: remove the directories of every group that holds no message: ``claimed/<g>/`` and
    ``ready/<g>/`` both empty, and neither changed for :data:`GROUP_IDLE` seconds.

    Not as soon as a directory is empty, as standard buckets are, and never without the queue's
    lock: on a GlusterFS distributed volume, an rmdir of a directory and a rename into it at the
    same moment can wait for each other for good (each holds one of the volume's internal entry
    locks the other needs), and the nodes' requests then hang in the kernel. So a group's
    directories are removed only under the queue's lock, which every send and claim holds, and
    only while no message of the group is in either directory. The renames into them that run
    without the lock (release, claim expiry, renew) move a message of the group from one directory
    to the other, and listing ``claimed/<g>`` before ``ready/<g>`` finds it in one of them.
    Renames from outside the group (due delays, transfers) take the lock
    (:meth:`QueueHandle.renaming_into_groups`). The idle time keeps a busy group's directories from
    being removed and made again between each of its messages."""
    if q.kind is not QueueKind.FIFO:
        return 0
    groups = sorted({*listdir(q.sub("ready")), *listdir(q.sub("claimed"))})
    idle = _idle_groups(q, groups, now)  # a first look without the lock: most passes find none
    if not idle:
        return 0
    removed = 0
    with q.fifo_lock():
        for g in _idle_groups(q, idle, now):
            for state in ("claimed", "ready"):
                with contextlib.suppress(OSError):
                    os.rmdir(q.sub(f"{state}/{g}"))
            removed += 1
    return removed


def _idle_groups(q: QueueHandle, groups: list[str], now: float) -> list[str]:
    idle = []
    for g in groups:
        if not L.FIFO_BUCKET_RE.fullmatch(g):
            continue
        dirs = (q.sub(f"claimed/{g}"), q.sub(f"ready/{g}"))  # claimed first: see remove_idle_groups
        if any(listdir(d) for d in dirs):
            continue
        changed = 0.0
        for d in dirs:
            with contextlib.suppress(FileNotFoundError):
                changed = max(changed, os.stat(d).st_mtime)
        if now - changed >= GROUP_IDLE:
            idle.append(g)
    return idle


def drop_expired(q: QueueHandle, now_ms: int) -> int:
    """Retention: ready buckets whose second is older than the queue's retention are dropped (the
    emptied directories too, except where removal is guarded: :func:`remove_empty_buckets`)."""
    if q.kind is QueueKind.FIFO:
        return 0
    cutoff = L.std_bucket(now_ms - int(q.info.config.retention * 1000))
    dropped = 0
    for b, bdir in q.ready_buckets(q.removable_before(now_ms)):
        if b >= cutoff:
            break
        for n in listdir(bdir):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{bdir}/{n}")
                dropped += 1
        if not q.guarded_buckets:
            with contextlib.suppress(OSError):
                os.rmdir(bdir)
    return dropped


def remove_empty_buckets(q: QueueHandle, now_ms: int) -> int:
    """Where removal is guarded (GlusterFS, see :mod:`spoolq.store.bucket_guard`): remove the
    empty ready buckets, ksec directories and delayed buckets older than
    :data:`~spoolq.store.bucket_guard.REMOVE_AFTER_MS`, under the queue's bucket lock held
    exclusive. A first look without the lock finds the candidates (most passes find none, and
    take no lock); under the lock each is listed again and removed only if still empty. Ready
    buckets are looked at oldest first, as far as a poll's cursor would read (until
    :data:`~spoolq.store.cursor.REFILL_TARGET` messages) and at most :data:`REMOVALS_PER_PASS`
    of them, so a pass costs about one cursor refill, holds the lock briefly, and never lists a
    deep backlog whole. Returns how many directories it removed."""
    if not q.guarded_buckets or q.kind is QueueKind.FIFO:
        return 0
    cutoff = L.std_bucket(now_ms - bucket_guard.REMOVE_AFTER_MS)
    ready, ksecs = _empty_ready_buckets(q, cutoff)
    cutoff_s = int(cutoff)
    delayed = [q.sub(f"delayed/{b}") for b in listdir(q.sub("delayed"))
               if L.STD_BUCKET_RE.fullmatch(b) and int(b) < cutoff_s and not listdir(q.sub(f"delayed/{b}"))]
    if not (ready or ksecs or delayed):
        return 0
    removed = 0
    with bucket_guard.removing(q.real_path) as held:
        if not held:
            return 0  # a rename into an old bucket runs somewhere: the next pass tries again
        for d in [*ready, *delayed, *ksecs]:  # a ksec directory after the buckets in it
            if listdir(d):  # listed again under the lock: see bucket_guard's race rule
                continue
            try:
                os.rmdir(d)
                removed += 1
            except OSError:
                continue
    return removed


def _empty_ready_buckets(q: QueueHandle, cutoff: str) -> tuple[list[str], list[str]]:
    """(empty ready buckets before ``cutoff``, ksec directories wholly before it that are empty or
    hold only those), oldest first, as far as :data:`REFILL_TARGET` messages into the queue and at
    most :data:`REMOVALS_PER_PASS` buckets."""
    ready: list[str] = []
    ksecs: list[str] = []
    seen = 0
    rdir = q.sub("ready")
    for ksec in sorted(listdir(rdir)):
        if not L.KSEC_RE.fullmatch(ksec):
            continue
        if ksec > L.ksec(cutoff) or seen >= REFILL_TARGET:
            break
        kdir = f"{rdir}/{ksec}"
        all_empty = True
        for b in sorted(listdir(kdir)):
            if not L.STD_BUCKET_RE.fullmatch(b):
                all_empty = False
                continue
            if b >= cutoff or seen >= REFILL_TARGET or len(ready) >= REMOVALS_PER_PASS:
                return ready, ksecs
            names = listdir(f"{kdir}/{b}")
            seen += len(names)
            if names:
                all_empty = False
            else:
                ready.append(f"{kdir}/{b}")
        if all_empty and ksec < L.ksec(cutoff):
            ksecs.append(kdir)
    return ready, ksecs


def sweep_dedup(q: QueueHandle, now_ms: int) -> int:
    """FIFO: forget deduplication records older than the 5-minute window."""
    if q.kind is not QueueKind.FIFO:
        return 0
    swept = 0
    ddir = q.sub("dedup")
    for n in listdir(ddir):
        try:
            if (now_ms / 1000) - os.stat(f"{ddir}/{n}").st_mtime > FIFO_DEDUP_WINDOW + 5:
                os.unlink(f"{ddir}/{n}")
                swept += 1
        except FileNotFoundError:
            continue
    return swept


def sweep_tmp(tdir: str, node_prefix: str, now: float) -> int:
    """Remove temp files of ``tdir``, and the per-process temp directories of message files
    (message_files.py), whose writer process is gone (this node's: named from ``node_prefix``) or
    that are very old."""
    swept = 0
    for n in listdir(tdir):
        path = f"{tdir}/{n}"
        dead = False
        if n.startswith(node_prefix):
            parts = n[len(node_prefix):].split("-")
            if parts and parts[0].isdigit():
                pid = int(parts[0])
                dead = pid != os.getpid() and not os.path.exists(f"/proc/{pid}")
        try:
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                swept += _sweep_process_tmp(path, dead, now)
            elif dead or now - st.st_mtime > TMP_MAX_AGE:
                os.unlink(path)
                swept += 1
        except FileNotFoundError:
            continue
    return swept


def _sweep_process_tmp(path: str, dead: bool, now: float) -> int:
    """A process's temp directory (message_files.py): removed whole when its process is dead; otherwise
    its files older than :data:`TMP_MAX_AGE` (a write takes milliseconds: these were abandoned),
    and the directory itself once empty and old (``rmdir`` fails if a file appeared meanwhile,
    and its writer makes the directory again when it next needs it)."""
    if dead:
        shutil.rmtree(path, ignore_errors=True)
        return 1
    swept = 0
    for n in listdir(path):
        with contextlib.suppress(FileNotFoundError):
            if now - os.stat(f"{path}/{n}").st_mtime > TMP_MAX_AGE:
                os.unlink(f"{path}/{n}")
                swept += 1
    with contextlib.suppress(OSError):
        if now - os.stat(path).st_mtime > TMP_MAX_AGE:
            os.rmdir(path)
    return swept


def sweep_staging(queues_dir: str, now: float) -> int:
    """Remove ``queues/.new~*`` directories left by a create_queue that crashed half-way."""
    swept = 0
    for n in listdir(queues_dir):
        path = f"{queues_dir}/{n}"
        try:
            if n.startswith(".new~") and now - os.stat(path).st_mtime > STAGING_MAX_AGE:
                shutil.rmtree(path, ignore_errors=True)
                swept += 1
        except FileNotFoundError:
            continue
    return swept


def sweep_trash(tdir: Path) -> int:
    swept = 0
    for n in listdir(str(tdir)):
        path = tdir / n
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        swept += 1
    return swept


def take_turn(q: QueueHandle, now_ms: int, interval: float) -> bool:
    """Whether this process does ``q``'s shared background pass now; if so, stamp the queue."""
    path = q.path
    now = now_ms / 1000
    try:
        if 0 <= now - os.stat(path).st_mtime < interval:
            return False
        os.utime(path, (now, now))
    except OSError as e:
        if e.errno in GONE:  # the queue was deleted meanwhile
            return False
        raise
    return True


class Maintenance:
    """Runs the steps of maintenance over a store's queues and root (see the module docstring)."""

    def __init__(self, catalog: QueueCatalog, *, trash: Trash, watcher: Watcher, archive: Archive, clock: Clock,
                 tmp_prefix: str, recover_journals: Callable[[], tuple[int, int]],
                 resume_moves: Callable[[int], int]) -> None:
        self.catalog = catalog
        self.trash = trash
        self.watcher = watcher
        self.archive = archive
        self.clock = clock
        self.tmp_prefix = tmp_prefix
        self.recover_journals = recover_journals
        self.resume_moves = resume_moves

    def queue(self, q: QueueHandle, now_ms: int) -> dict[str, int]:
        """One queue's steps; what each did."""
        done = {
            "claims_expired": expire_claims(q, now_ms, self.trash),
            "delays_released": release_due(q, now_ms),
            "retention_dropped": drop_expired(q, now_ms),
            "dedup_swept": sweep_dedup(q, now_ms),
            "origins_pruned": q.prune_origins(now_ms),
        }
        if q.info.config.archive or listdir(q.sub("acked")) or listdir(q.sub("archive-work")):
            done["archived"] = self.archive.compact(q, now_ms)
        if done["claims_expired"] or done["delays_released"]:
            self.watcher.notify(q.path)
        return done

    def maybe(self, q: QueueHandle, interval: float) -> bool:
        """Run this queue's maintenance if it has not run for ``interval`` seconds in this process.

        Returns True if it made messages visible (expired claims, due delays)."""
        now = self.clock()
        if now - q.last_maintained < interval:
            return False
        q.last_maintained = now
        try:
            done = self.queue(q, int(now * 1000))
        except OSError:
            return False  # maintenance is retried; the operation that triggered it must not fail for it
        return bool(done["claims_expired"] or done["delays_released"])

    def run(self, now_ms: int, shared_interval: float | None = None) -> dict[str, int]:
        """One pass over every queue and the root. With ``shared_interval`` (background passes), a
        queue another process maintained less than that many seconds ago is skipped."""
        catalog = self.catalog
        totals: dict[str, int] = {}
        for name in catalog.list_queues():
            q = catalog.find(name)
            if q is None:
                continue
            if shared_interval is not None and not take_turn(q, now_ms, shared_interval):
                continue
            q.last_maintained = now_ms / 1000
            for key, value in self.queue(q, now_ms).items():
                totals[key] = totals.get(key, 0) + value
            totals["groups_removed"] = totals.get("groups_removed", 0) + remove_idle_groups(q, time.time())
            totals["buckets_removed"] = totals.get("buckets_removed", 0) + remove_empty_buckets(q, now_ms)
        totals["tmp_swept"] = sweep_tmp(f"{catalog.root}/tmp", self.tmp_prefix, time.time())
        totals["journals_retired"], totals["journal_restored"] = self.recover_journals()
        totals["trash_swept"] = sweep_trash(catalog.root / "trash")
        totals["staging_swept"] = sweep_staging(catalog.queues_dir, time.time())
        totals["deletions_finished"] = sweep_deleting(catalog, time.time())
        totals["moves_resumed"] = self.resume_moves(now_ms)
        totals["segments_expired"] = self.archive.expire_segments(now_ms)
        return totals
