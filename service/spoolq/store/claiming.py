"""Claims: poll (and its long wait), dead-lettering.

A claim renames ``ready/<b>/<id>~rc~frt`` to ``claimed/<shard>/<id>~rc+1~frt~exp~tok``;
the token is unique to the claimant, so a successful rename means the claim is ours.
Nothing here waits for a flush except an at-most-once delivery (see group_commit.py), and, with the
commit journal, a dead letter out of a standard queue, which is journaled before its rename
(see journal.py: a replay then never writes it back into its queue). What ends a claim (ack,
renew, release) is :mod:`spoolq.store.claim_ends`.

A message present twice (a raw copy of a live root put in place, a crash between the two halves
of a claim on a shared file system) is tolerated at no cost to the common path: a poll never
returns one id twice (a second copy it claims is dropped); acks and maintenance deal with the
rest (:mod:`spoolq.store.claim_ends`, ``expire_claims``). Each claim made here is remembered
(:class:`~spoolq.store.remembered_claims.RememberedClaims`, shared with the claims' ends), so that
its ack by id renames its file without listing anything.

A poll with a claim ttl of 0 claims each message for :data:`ZERO_CLAIM` and releases it at once:
received (its receive count raised), and visible again. :meth:`Claiming.waiting` is a poll's loop
(maintenance, a try, a wait for a wake-up), which the store also runs for ``peek_ready``.

:class:`Claiming` is a part of the file store, built with the store's queues, the flush, the
wake-ups, the trash, the queue writer (dead letters), the claims made here and the clock; a poll
runs its queue's maintenance through the hook the store hands it
(:meth:`spoolq.store.maintenance.Maintenance.maybe`: maintenance stands above the operations), also
when it finds nothing.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from spoolq.errors import (
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.codec import CorruptMessage, decode_message, message_of
from spoolq.store.cursor import HomeLane
from spoolq.store.fileops import listdir, read_file, rename_into
from spoolq.store.group_commit import GroupCommit
from spoolq.store.handle import QueueHandle
from spoolq.store.model import (
    MAX_CLAIM_TTL,
    MAX_POLL_LIMIT,
    MAX_WAIT,
    Delivery,
    QueueInfo,
    QueueKind,
    QueueRef,
)
from spoolq.store.queue_config import check_int, check_number
from spoolq.store.queue_writer import QueueWriter
from spoolq.store.remembered_claims import RememberedClaims
from spoolq.store.trash import Trash
from spoolq.store.watch import FALLBACK_STEP, Watcher

#: seconds one poll spends trying candidates before it returns what it has (possibly nothing, as
#: an SQS short poll may): on a network file system every claim rename, lost races included, is a
#: round trip, and the kernel serialises cross-directory renames per mount, so a poll walking a
#: listing that other nodes already claimed could otherwise hold a request for tens of seconds
CLAIM_TIME_BUDGET = 1.0
#: an empty poll re-runs claim expiry and due delays if they have not run for this long (seconds)
EMPTY_POLL_MAINTENANCE = 0.1
#: the claim a poll with a claim ttl of 0 makes before it releases it (seconds)
ZERO_CLAIM = 0.001

T = TypeVar("T")


#: runs a queue's maintenance if it has not run for that many seconds in this process; True if
#: it made messages visible (:meth:`spoolq.store.maintenance.Maintenance.maybe`, handed in by the store)
MaintainQueue = Callable[[QueueHandle, float], bool]


#: How far a directory's mtime may lag the clock message ids are made from, in ms. The kernel
#: stamps a directory change from its coarse clock, up to one tick (4 ms measured here, 10 ms at
#: HZ=100) behind ``time.time()``; a FIFO group's last claim, release or delete is taken at the
#: latest instant it may have happened, so a group released after another group's head was sent
#: never sorts before it.
DIRECTORY_CLOCK_LAG_MS = 10


class _Lost:
    """The type of :data:`LOST`."""


#: what :meth:`Claiming._claim_one` returns for a candidate another poller claimed first
LOST = _Lost()


class Claiming:
    def __init__(self, catalog: QueueCatalog, *, commit: GroupCommit, watcher: Watcher, trash: Trash,
                 writer: QueueWriter, claimed_here: RememberedClaims, clock: Clock, maintain: MaintainQueue,
                 maintenance_interval: float, peers: int, lanes_file: str) -> None:
        self.catalog = catalog
        self.commit = commit
        self.watcher = watcher
        self.trash = trash
        self.writer = writer
        self.clock = clock
        self.maintenance_interval = maintenance_interval
        self.peers = peers
        self.maintain = maintain
        #: the claims made here, for acks by id (see the module doc)
        self.claimed_here = claimed_here
        #: this process's byte of pollers.lock: its lane of each bucket, and the count of lanes (cursor.py)
        self.home = HomeLane(lanes_file)

    def close(self) -> None:
        self.home.close()

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        check_int("limit", limit, 1, MAX_POLL_LIMIT)
        if claim_ttl is not None:
            check_number("claim_ttl", claim_ttl, 0, MAX_CLAIM_TTL)

        def claim(q: QueueHandle) -> list[Delivery]:
            ttl = q.info.config.claim_ttl if claim_ttl is None else claim_ttl
            if ttl == 0:  # received, and visible again at once: the shortest claim, then released
                return self._released(q, self._claim(q, limit, ZERO_CLAIM))
            return self._claim(q, limit, ttl)

        return self.waiting(queue, wait, claim, "polling", name)

    def waiting(self, queue: QueueRef, wait: float, take: Callable[[QueueHandle], list[T]], doing: str,
                name: str | None = None) -> list[T]:
        """``take(queue)`` until it finds something or ``wait`` seconds have passed: a poll's loop
        (its queue's maintenance first, wake-ups between tries; see the module docstring).
        ``name``: the queue's name, checked already."""
        if name is None:
            name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        check_number("wait", wait, 0, MAX_WAIT)
        deadline = time.monotonic() + wait
        watcher = self.watcher
        q = self.catalog.resolve(queue)
        while True:
            if q is not None and wait > 0:
                # armed before the generation is read: a send from another process that lands
                # between this poll and the wait below is an inotify event, not a missed wake-up
                watcher.watch_once(q.path)
            seen = watcher.generation(q.path) if q is not None else 0
            if q is not None:
                self.maintain(q, self.maintenance_interval)
                try:
                    got = take(q)
                    if not got and self.maintain(q, EMPTY_POLL_MAINTENANCE):
                        got = take(q)  # expired claims or due delays came back
                except OSError as e:
                    raise storage_error(e, f"{doing} {name!r}") from e
                if got:
                    return got
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            if q is None:
                time.sleep(min(remaining, 0.05))
            else:
                watcher.wait(q.path, seen, remaining)
            q = self.catalog.find(name)  # created, changed or deleted meanwhile

    def wait_point(self, queue: QueueRef) -> tuple[str, int, float]:
        """Where a poll of ``queue`` that finds nothing would wait, read *before* polling.

        Returns the queue's watch key, its generation now and how often a waiter must re-poll
        without a wake-up (``Watcher.rescan``; ``FALLBACK_STEP`` without inotify or when the
        queue does not exist yet). A caller that polls after this and finds nothing waits
        until the key's generation differs (``watcher.add_listener``) or that time passes. A
        queue that does not exist yet has the key it will have: a send in this process that
        creates it wakes the waiter at once.
        """
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        q = self.catalog.resolve(queue)
        watcher = self.watcher
        if q is None:
            path = self.catalog.queue_path(name)
            return path, watcher.generation(path), FALLBACK_STEP
        armed = watcher.watch(q.path)
        return q.path, watcher.generation(q.path), watcher.rescan if armed else FALLBACK_STEP

    def _claim(self, q: QueueHandle, limit: int, ttl: float) -> list[Delivery]:
        now_ms = self._now_ms()
        exp = now_ms + int(ttl * 1000)
        if q.kind is QueueKind.FIFO:
            with q.fifo_lock():
                return self._claim_fifo(q, limit, now_ms, exp)
        out: list[Delivery] = []
        ids: set[str] = set()  # the ids in out
        keep_from = q.removable_before(now_ms)  # guarded (GlusterFS): "", maintenance removes them

        def keep_recent() -> Iterator[tuple[str, str]]:
            return q.ready_buckets(keep_from)

        lanes, home = self.home.lanes(self.peers)  # registers this process as a poller
        peers = lanes - 1
        budget = 20 * limit + 2048  # candidates tried per poll: bounds the work of one call
        give_up_at = time.monotonic() + CLAIM_TIME_BUDGET
        try:
            while len(out) < limit and budget > 0 and time.monotonic() < give_up_at:
                candidates = q.cursor.take(keep_recent, limit - len(out), peers, home, keep_from)
                if not candidates:
                    break
                budget -= len(candidates)
                lost = lost_in_a_row = 0
                for directory, name in candidates:
                    d = self._claim_one(q, directory, name, L.id_shard(name), now_ms, exp)  # a name starts with its id
                    if isinstance(d, _Lost):
                        lost += 1
                        lost_in_a_row += 1
                        continue
                    lost_in_a_row = 0
                    if d is not None:
                        self._add_once(q, out, d, ids)
                if lost:
                    q.cursor.report(lost, lost_in_a_row, claimed=lost_in_a_row < len(candidates))
        except OSError:
            # a storage error after some claims (a file system stalling or failing over) ends the
            # poll with what it claimed: an error answer would leave those claimed for nobody, out
            # of sight until their claims expire
            if not out:
                raise
        if q.kind is QueueKind.DEDUP:
            out.sort(key=lambda d: d.message.body)
        return out

    def _claim_one(self, q: QueueHandle, src_dir: str, name: str, shard: str, now_ms: int,
                   exp: int) -> Delivery | _Lost | None:
        """Claim the ready file ``src_dir/name``: its delivery; :data:`LOST` if another poller
        claimed it first; None if it was not delivered (gone since, expired, dead-lettered,
        quarantined)."""
        parsed = L.parse_ready(name)
        if parsed is None:  # not ours: keep it out of every poller's way
            q.quarantine(f"{src_dir}/{name}")
            return None
        frt = parsed.frt or now_ms
        cname = L.claimed_name(parsed.id, parsed.rc + 1, frt, exp, L.new_token())
        cdir = q.sub(f"claimed/{shard}")
        try:
            rename_into(f"{src_dir}/{name}", cdir, cname, base=q.path)
        except FileNotFoundError:
            return LOST  # another poller won it
        cpath = f"{cdir}/{cname}"
        try:
            meta, body = decode_message(read_file(cpath, message=True))
        except FileNotFoundError:
            return None
        except CorruptMessage:
            q.quarantine(cpath)
            return None
        except OSError:
            with contextlib.suppress(OSError), q.renaming_into_buckets():  # unread: put back, not left claimed
                rename_into(cpath, src_dir, name, base=q.path)
            raise
        rc = parsed.rc + 1
        dl = q.info.config.dead_letter
        if len(meta) > 1 or dl is not None:  # more than its send time: a ttl, receive limit, at-most-once...
            expire = meta.get("x")
            if isinstance(expire, int) and expire <= now_ms:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(cpath)
                return None
            max_receives = meta.get("m") or (dl.max_receives if dl else None)
            if isinstance(max_receives, int) and rc > max_receives:
                self._dead_letter(q, cpath, parsed, meta)
                return None
        if q.kind is QueueKind.DEDUP:
            q.surface(parsed.id, body)
        if meta.get("o"):
            # at-most-once: the delivery itself is the last state change, made durable first
            with contextlib.suppress(FileNotFoundError):
                os.unlink(cpath)
            self.commit.note_paths(cdir)
            self.commit.flush()
        else:  # an at-most-once delivery has ended already: nothing to remember
            self.claimed_here.remember(parsed.id, cpath)
        return Delivery(message_of(parsed.id, meta, body, rc, frt), f"{shard}:{cname}", exp / 1000)

    def _claim_fifo(self, q: QueueHandle, limit: int, now_ms: int, exp: int) -> list[Delivery]:
        """Under the queue's FIFO lock. A group is delivered in order from its head up to its first
        message in flight (claims whose time ran out go back first), and groups are taken in the order
        they became available: the time of their head, or of the last claim, release or delete in them
        if later, so a group received and released goes behind groups nobody received (as SQS does)."""
        ready = q.sub("ready")
        heads: list[tuple[int, str, str, list[str]]] = []
        for group in listdir(ready):
            if not L.FIFO_BUCKET_RE.match(group):
                continue
            names = listdir(f"{ready}/{group}")
            claimed_dir = q.sub(f"claimed/{group}")
            try:  # the group's last claim, release or delete (never claimed: no directory)
                touched: int | None = os.stat(claimed_dir).st_mtime_ns // 1_000_000
            except FileNotFoundError:
                touched = None
            claimed = listdir(claimed_dir) if touched is not None else []
            first_in_flight: str | None = None
            for cname in claimed:
                c = L.parse_claimed(cname)
                if c is None:
                    continue
                if c.expires <= now_ms and q.put_back(f"{claimed_dir}/{cname}", c, now_ms):
                    names.append(L.ready_name(c.id, c.rc, c.frt))  # its visibility ended: deliverable again
                elif first_in_flight is None or c.id < first_in_flight:
                    first_in_flight = c.id
            names = sorted(n for n in names if first_in_flight is None or L.name_id(n) < first_in_flight)
            if not names:
                continue  # empty, or blocked by its head in flight (idle groups: remove_idle_groups)
            available = max(L.id_time_ms(L.name_id(names[0])),
                            touched + DIRECTORY_CLOCK_LAG_MS if touched is not None else 0)
            heads.append((available, names[0], group, names))
        heads.sort()
        out: list[Delivery] = []
        ids: set[str] = set()
        for _available, _head, group, names in heads:
            for name in names:
                if len(out) >= limit:
                    return out
                d = self._claim_one(q, f"{ready}/{group}", name, group, now_ms, exp)
                if isinstance(d, Delivery):  # else expired or dead-lettered (we hold the lock: nobody else took it)
                    self._add_once(q, out, d, ids)
        return out

    def _released(self, q: QueueHandle, got: list[Delivery]) -> list[Delivery]:
        """The deliveries ``got`` of a poll, their claims released at once (a claim of 0 seconds)."""
        now_ms = self._now_ms()
        released = False
        for d in got:
            shard, _, cname = d.receipt.partition(":")
            p = L.parse_claimed(cname)
            if p is not None and q.put_back(q.sub(f"claimed/{shard}/{cname}"), p, now_ms):
                self.claimed_here.take(p.id)
                released = True
        if released:
            self.watcher.notify(q.path)
        return got

    def _add_once(self, q: QueueHandle, out: list[Delivery], d: Delivery, ids: set[str]) -> None:
        """Append ``d`` unless its message is in the answer already (``ids``: those of ``out``). A
        message present twice (a raw copy of a live root put in place, a crash between two renames
        on a shared file system) is delivered once: the second copy, just claimed, is dropped.

        A message met again because its earlier claim in this poll ended meanwhile is not a second
        copy: a poll that outlasts its claims (a short claim on a busy machine) may see another
        process's maintenance put the message back and claim it again. The earlier claim's file is
        then gone (its shard, listed, does not name it), and the new delivery replaces it in the
        answer; dropping the new claim would lose the message."""
        if d.message.id in ids:
            at = next(i for i, e in enumerate(out) if e.message.id == d.message.id)
            shard, _, cname = out[at].receipt.partition(":")
            if cname not in listdir(q.sub(f"claimed/{shard}")):
                out[at] = d
                return
            self.claimed_here.take(d.message.id)  # it names the copy dropped here: list on ack
            shard, _, cname = d.receipt.partition(":")
            with contextlib.suppress(FileNotFoundError):
                self.trash.discard(q.sub(f"claimed/{shard}/{cname}"))
            return
        ids.add(d.message.id)
        out.append(d)

    def _dead_letter(self, q: QueueHandle, path: str, parsed: L.ReadyName, meta: Mapping[str, Any]) -> None:
        dl = q.info.config.dead_letter
        target = self.catalog.find(dl.queue) if dl else None
        if target is None or target.path == q.path:
            if dl is None:  # a per-message max_receives without a DLQ: drop it
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                return
            # the dead-letter queue is missing: keep the message rather than lose it
            bucket = os.path.basename(os.path.dirname(path))
            with contextlib.suppress(FileNotFoundError), q.renaming_into_buckets():
                rename_into(path, q.ready_dir(q.ready_bucket(parsed.id, bucket)),
                            L.ready_name(parsed.id, parsed.rc, parsed.frt), base=q.path)
            return
        # the message keeps its id's head and its receive count (the receive that found it over the
        # limit handed it to no one): SQS's DLQ shows the MessageId and the count the source had;
        # where it came from is noted for a move back to the sources (:meth:`QueueHandle.note_origin`)
        new_id = L.rebind_id(parsed.id, target.name)
        target.note_origin(new_id, q.name)
        self.writer.transfer(path, target, meta, keep_counts=(parsed.rc, parsed.frt or self._now_ms()),
                           new_id=new_id, from_standard=q.kind is QueueKind.STANDARD)
