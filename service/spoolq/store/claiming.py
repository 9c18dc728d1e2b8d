"""Claims and their ends: poll, ack, renew, release, unclaim_all, dead-lettering.

A claim renames ``ready/<b>/<id>~rc~frt`` to ``claimed/<shard>/<id>~rc+1~frt~exp~tok``;
the token is unique to the claimant, so a successful rename means the claim is ours.
Nothing here waits for a flush except an at-most-once delivery (see group_commit.py), and, with the
commit journal, a dead letter out of a standard queue, which is journaled before its rename
(see journal.py: a replay then never writes it back into its queue).

A message present twice (a raw copy of a live root put in place, a crash between the two halves
of a claim on a shared file system) is tolerated at no cost to the common path: a poll never
returns one id twice (a second copy it claims is dropped), the ack of a claim that this process
did not make (a claim from before a start, another worker's) also removes the message's ready
copy under its name from before that claim (one ``stat``), an ack by id that has to list its
shard (below) removes every claimed copy it finds there, and maintenance drops an expired claim
whose pre-claim ready copy exists instead of requeueing it (``expire_claims``). The ack of a claim
this process made and remembers looks for no ready copy: that claim's own rename took the ready
name away, and only a copy put into the data directory while the service runs could bring it
back (a raw copy is put back through ``spoolq restore``, or in place with the service stopped:
then no claim of it is remembered).

An ack by id (EmoDB, Disque) does not know the claimed file's name: a claim made by this process
is remembered (:class:`~spoolq.store.remembered_claims.RememberedClaims`: the id's latest claimed
file), and its ack renames that file without listing anything; an id claimed elsewhere, renewed elsewhere since (the renewal renamed
it), or no longer remembered, is looked for in one listing of its claim shard. A second claimed copy of a
remembered id (only a raw copy of a live root makes one: a poll drops a second copy it claims)
then outlives the ack until its claim expires and is delivered once more: a duplicate, never a
loss.

The nack count (:mod:`spoolq.store.jobs`) of an acknowledged message goes with it, except where
the file's name shows it was never put back (a claim on its first delivery, or a message never
delivered): a nack puts a message back, so only a message received before can have a count.

:class:`Claiming` is a part of the file store built on its :class:`~spoolq.store.queues.StoreCore`
(a poll with ``claim_ttl=0`` peeks: :meth:`~spoolq.store.queues.StoreCore.peek_queue`); a poll runs
its queue's maintenance through the hook the store hands it (:func:`spoolq.store.maintenance.maybe_maintain`:
maintenance stands above the operations), also when it finds nothing.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from spoolq.errors import (
    InvalidArgument,
    storage_error,
)
from spoolq.store import layout as L
from spoolq.store.codec import CorruptMessage, decode_message
from spoolq.store.cursor import HomeLane
from spoolq.store.fileops import listdir, read_file, rename_into
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
from spoolq.store.queues import StoreCore
from spoolq.store.remembered_claims import RememberedClaims
from spoolq.store.watch import FALLBACK_STEP

#: seconds one poll spends trying candidates before it returns what it has (possibly nothing, as
#: an SQS short poll may): on a network file system every claim rename, lost races included, is a
#: round trip, and the kernel serialises cross-directory renames per mount, so a poll walking a
#: listing that other nodes already claimed could otherwise hold a request for tens of seconds
CLAIM_TIME_BUDGET = 1.0
#: an empty poll re-runs claim expiry and due delays if they have not run for this long (seconds)
EMPTY_POLL_MAINTENANCE = 0.1


#: runs a queue's maintenance if it has not run for that many seconds in this process; True if
#: it made messages visible (:func:`spoolq.store.maintenance.maybe_maintain`, handed in by the store)
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
    def __init__(self, core: StoreCore, maintain: MaintainQueue) -> None:
        self.core = core
        self.maintain = maintain
        #: the claims made here, for acks by id (see the module doc)
        self.claimed_here = RememberedClaims()
        #: the lane of each bucket this process takes first when it has peers (cursor.py)
        self.home = HomeLane(f"{core.root}/pollers.lock")

    def close(self) -> None:
        self.home.close()

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        check_int("limit", limit, 1, MAX_POLL_LIMIT)
        if claim_ttl is not None:
            check_number("claim_ttl", claim_ttl, 0, MAX_CLAIM_TTL)
        check_number("wait", wait, 0, MAX_WAIT)
        deadline = time.monotonic() + wait
        core = self.core
        q = core.resolve(queue)
        while True:
            if q is not None and wait > 0:
                # armed before the generation is read: a send from another process that lands
                # between this poll and the wait below is an inotify event, not a missed wake-up
                core.watcher.watch_once(q.path)
            seen = core.watcher.generation(q.path) if q is not None else 0
            if q is not None:
                self.maintain(q, core.maintenance_interval)
                ttl = q.info.config.claim_ttl if claim_ttl is None else claim_ttl
                try:
                    got = self._claim(q, limit, ttl)
                    if not got and self.maintain(q, EMPTY_POLL_MAINTENANCE):
                        got = self._claim(q, limit, ttl)  # expired claims or due delays came back
                except OSError as e:
                    raise storage_error(e, f"polling {name!r}") from e
                if got:
                    return got
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            if q is None:
                time.sleep(min(remaining, 0.05))
            else:
                core.watcher.wait(q.path, seen, remaining)
            q = core.find(name)  # created, changed or deleted meanwhile

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
        q = self.core.resolve(queue)
        watcher = self.core.watcher
        if q is None:
            path = self.core.queue_path(name)
            return path, watcher.generation(path), FALLBACK_STEP
        armed = watcher.watch(q.path)
        return q.path, watcher.generation(q.path), watcher.rescan if armed else FALLBACK_STEP

    def _claim(self, q: QueueHandle, limit: int, ttl: float) -> list[Delivery]:
        now_ms = self.core.now_ms()
        if ttl == 0:  # EmoDB: ttl=0 returns unclaimed messages without claiming them
            return [Delivery(m, receipt="", claimed_until=now_ms / 1000)
                    for m in self.core.peek_queue(q, limit, include_claimed=False)]
        exp = now_ms + int(ttl * 1000)
        if q.kind is QueueKind.FIFO:
            with self.core.fifo_lock(q):
                return self._claim_fifo(q, limit, now_ms, exp)
        out: list[Delivery] = []
        ids: set[str] = set()  # the ids in out
        keep_from = q.removable_before(now_ms)  # guarded (GlusterFS): "", maintenance removes them

        def keep_recent() -> Iterator[tuple[str, str]]:
            return q.ready_buckets(keep_from)

        peers = self.core.peers
        home = self.home.lane(peers + 1) if peers > 0 else 0
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
        core = self.core
        parsed = L.parse_ready(name)
        if parsed is None:  # not ours: keep it out of every poller's way
            core.quarantine(f"{src_dir}/{name}", q)
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
            core.quarantine(cpath, q)
            return None
        except OSError:
            with contextlib.suppress(OSError), core.renaming_into_buckets(q):  # unread: put back, not left claimed
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
            core.commit.note_paths(cdir)
            core.commit.flush()
        else:  # an at-most-once delivery has ended already: nothing to remember
            self.claimed_here.remember(parsed.id, cpath)
        return Delivery(core.message(parsed.id, meta, body, rc, frt), f"{shard}:{cname}", exp / 1000)

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
                if c.expires <= now_ms and self._unclaim(q, f"{claimed_dir}/{cname}", c):
                    names.append(L.ready_name(c.id, c.rc, c.frt))  # its visibility ended: deliverable again
                elif first_in_flight is None or c.id < first_in_flight:
                    first_in_flight = c.id
            names = sorted(n for n in names if first_in_flight is None or n[:40] < first_in_flight)
            if not names:
                continue  # empty, or blocked by its head in flight (idle groups: remove_idle_groups)
            available = max(L.id_time_ms(names[0][:40]),
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

    def _add_once(self, q: QueueHandle, out: list[Delivery], d: Delivery, ids: set[str]) -> None:
        """Append ``d`` unless its message is in the answer already (``ids``: those of ``out``). A
        message present twice (a raw copy of a live root put in place, a crash between two renames
        on a shared file system) is delivered once: the second copy, just claimed, is dropped."""
        if d.message.id in ids:
            self.claimed_here.take(d.message.id)  # it names the copy dropped here: list on ack
            shard, _, cname = d.receipt.partition(":")
            with contextlib.suppress(FileNotFoundError):
                self.core.trash.discard(q.sub(f"claimed/{shard}/{cname}"))
            return
        ids.add(d.message.id)
        out.append(d)

    def _dead_letter(self, q: QueueHandle, path: str, parsed: L.ReadyName, meta: Mapping[str, Any]) -> None:
        dl = q.info.config.dead_letter
        target = self.core.find(dl.queue) if dl else None
        if target is None or target.path == q.path:
            if dl is None:  # a per-message max_receives without a DLQ: drop it
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                return
            # the dead-letter queue is missing: keep the message rather than lose it
            bucket = os.path.basename(os.path.dirname(path))
            with contextlib.suppress(FileNotFoundError), self.core.renaming_into_buckets(q):
                rename_into(path, q.ready_dir(q.ready_bucket(parsed.id, bucket)),
                            L.ready_name(parsed.id, parsed.rc, parsed.frt), base=q.path)
            return
        # the message keeps its id's head and its receive count (the receive that found it over the
        # limit handed it to no one): SQS's DLQ shows the MessageId and the count the source had;
        # where it came from is noted for a move back to the sources (:meth:`QueueHandle.note_origin`)
        new_id = L.rebind_id(parsed.id, target.name)
        target.note_origin(new_id, q.name)
        self.core.transfer(path, target, meta, keep_counts=(parsed.rc, parsed.frt or self.core.now_ms()),
                           new_id=new_id, from_standard=q.kind is QueueKind.STANDARD)

    def _each_ref(self, queue: QueueRef, refs: Sequence[str], doing: str,
                  op: Callable[[QueueHandle, L.Ref], bool]) -> tuple[list[bool], QueueHandle | None]:
        """Validate the queue name and every ref first (nothing changes on bad input), then apply
        ``op`` to each ref: one flag per ref, and the queue. A queue that does not exist has
        nothing to act on: all False."""
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        if isinstance(refs, (str, bytes)) or not isinstance(refs, Sequence):
            raise InvalidArgument("refs must be a sequence of message ids or receipts")
        parsed = [L.parse_ref(r, name) for r in refs]
        q = self.core.resolve(queue)
        if q is None:
            return [False] * len(parsed), None
        try:
            return [op(q, ref) for ref in parsed], q
        except OSError as e:
            raise storage_error(e, f"{doing} in {name!r}") from e

    def ack(self, queue: QueueRef, refs: Sequence[str], *, released_too: bool = False) -> list[bool]:
        """Acknowledge by id or receipt. A receipt acknowledges its own claim; with
        ``released_too`` it also acknowledges its message after the claim was released or
        expired, as long as nobody received it since (same receive count: SQS's "the most
        recent receipt handle deletes")."""
        return self._each_ref(queue, refs, "acknowledging", lambda q, ref: self._ack_one(q, ref, released_too))[0]

    def _ack_one(self, q: QueueHandle, ref: L.Ref, released_too: bool = False) -> bool:
        if ref.claimed_name is None:  # by id: the claim made here first (see the module doc)
            known = self.claimed_here.take(ref.id)
            if known is not None and known.startswith(q.path + "/claimed/") and self._finish(q, known):
                return True  # made here: no ready copy to look for (the module doc)
        acked, claims = self._ack_files(q, ref, released_too)
        known = None
        if acked and ref.claimed_name is not None:  # by receipt: the claim remembered for it ended too
            known = self.claimed_here.take(ref.id)
        for path in claims:
            if path != known:  # a claim not made here: its message may have a ready copy
                self._drop_ready_copy(q, path)
        return acked

    def _ack_files(self, q: QueueHandle, ref: L.Ref, released_too: bool) -> tuple[bool, list[str]]:
        """Acknowledge what ``ref`` names: its receipt's claim, or (an id) every claimed copy of the
        message, or else its unclaimed copy. (acknowledged, the claimed files acknowledged)."""
        if ref.claimed_name is not None and ref.shard is not None:
            path = q.sub(f"claimed/{ref.shard}/{ref.claimed_name}")
            if self._finish(q, path):
                return True, [path]  # the receipt names the file: no lookup first (the common case)
        if ref.claimed_name is None:  # by id, not claimed here: one listing of its shard
            done = [path for path in self._claimed_copies(q, ref.id) if self._finish(q, path)]
            if done:
                return True, done
            loose = q.locate_unclaimed(ref.id)
            return loose is not None and self._finish(q, f"{loose[0]}/{loose[1]}", claimed=False), []
        found = q.locate_claimed(ref)
        if found is None and released_too:
            loose = q.locate_unclaimed(ref.id)
            return (loose is not None and loose[2].rc == ref.receive_count
                    and self._finish(q, f"{loose[0]}/{loose[1]}", claimed=False)), []
        if found is None or not self._finish(q, found[0]):
            return False, []
        return True, [found[0]]

    @staticmethod
    def _claimed_copies(q: QueueHandle, mid: str) -> list[str]:
        """Every claimed file of message ``mid`` (normally one): one listing of its shard."""
        prefix = f"{mid}~"
        shards = [L.id_shard(mid)] if q.kind is not QueueKind.FIFO else listdir(q.sub("claimed"))
        return [q.sub(f"claimed/{shard}/{n}") for shard in shards for n in listdir(q.sub(f"claimed/{shard}"))
                if n.startswith(prefix) and L.parse_claimed(n) is not None]

    def _drop_ready_copy(self, q: QueueHandle, claimed: str) -> None:
        """After the ack of the claimed file ``claimed``: the message's copy under its ready name
        from before that claim goes too (one ``stat``, no listing). Such a copy is what a crash
        between the two halves of a claim on a shared file system, or a raw copy of a live root
        taken while a poll claimed the message, leaves in ``ready/``."""
        directory, _, name = claimed.rpartition("/")
        p = L.parse_claimed(name)
        if p is None or p.rc < 1:
            return
        if q.kind is QueueKind.FIFO:
            ready_dir = q.ready_dir(directory[directory.rfind("/") + 1:])  # the shard is the group
        else:
            bucket = L.std_bucket(L.id_time_ms(p.id))
            ready_dir = f"{q.path}/ready/{bucket[:8]}/{bucket}"  # q.ready_dir(bucket)
        before = f"{ready_dir}/{L.ready_name(p.id, p.rc - 1, p.frt if p.rc > 1 else 0)}"
        if os.path.exists(before):
            with contextlib.suppress(FileNotFoundError):
                self.core.trash.discard(before)

    def _finish(self, q: QueueHandle, path: str, *, claimed: bool = True) -> bool:
        """Ack one file: the rename out of the queue is the ack; the unlink happens later, off the
        request path (an unlink of a freshly written file can wait for its writeback). The
        message's nack count goes with it (:mod:`spoolq.store.jobs`)."""
        try:
            if q.info.config.archive:
                os.rename(path, q.sub(f"acked/{os.path.basename(path)}~{self.core.now_ms():x}"))
            else:
                self.core.trash.discard(path)
        except FileNotFoundError:
            return False
        if q.kind is not QueueKind.FIFO and _may_have_nacks(os.path.basename(path), claimed):
            with contextlib.suppress(OSError):
                os.unlink(q.nacks_file(os.path.basename(path)[:40]))
        return True

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float, *, extend_only: bool = True,
              claim_unclaimed: bool = False, live_only: bool = False) -> list[bool]:
        """Set a claim's expiry to now + ``ttl``. ``live_only``: a claim that already expired
        (not yet requeued by maintenance) counts as gone, as SQS's "not in flight"."""
        check_number("ttl", ttl, 0, MAX_CLAIM_TTL)
        if ttl == 0:
            return self.release(queue, refs, live_only=live_only)
        now = self.core.now_ms()
        new_exp = now + int(ttl * 1000)
        return self._each_ref(queue, refs, "renewing claims", lambda q, ref: self._renew_one(
            q, ref, new_exp, extend_only, claim_unclaimed, now if live_only else None))[0]

    def _renew_one(self, q: QueueHandle, ref: L.Ref, new_exp: int, extend_only: bool, claim_unclaimed: bool,
                   live_after: int | None = None) -> bool:
        found = q.locate_claimed(ref)
        if found is not None and live_after is not None and found[1].expires <= live_after:
            return False
        if found is not None:
            path, p = found
            if extend_only and p.expires >= new_exp:
                return True
            renewed = f"{os.path.dirname(path)}/{L.claimed_name(p.id, p.rc, p.frt, new_exp, L.new_token())}"
            try:
                os.rename(path, renewed)
            except FileNotFoundError:
                return False
            self.claimed_here.renamed(p.id, path, renewed)
            return True
        if not claim_unclaimed or ref.claimed_name is not None:
            return False
        loose = q.locate_unclaimed(ref.id)
        if loose is None:
            return False
        d, n, u = loose
        shard = os.path.basename(d) if q.kind is QueueKind.FIFO else L.id_shard(u.id)
        try:
            rename_into(f"{d}/{n}", q.sub(f"claimed/{shard}"),
                        L.claimed_name(u.id, u.rc, u.frt, new_exp, L.new_token()), base=q.path)
        except FileNotFoundError:
            return False
        return True

    def release(self, queue: QueueRef, refs: Sequence[str], *, live_only: bool = False) -> list[bool]:
        """Make claimed messages visible again now. ``live_only``: as for :meth:`renew`."""
        live_after = self.core.now_ms() if live_only else None
        out, q = self._each_ref(queue, refs, "releasing claims",
                                lambda q, ref: self._release_one(q, ref, live_after))
        if q is not None and any(out):
            self.core.watcher.notify(q.path)
        return out

    def _release_one(self, q: QueueHandle, ref: L.Ref, live_after: int | None = None) -> bool:
        found = q.locate_claimed(ref)
        if found is None or (live_after is not None and found[1].expires <= live_after):
            return False
        if not self._unclaim(q, found[0], found[1]):
            return False
        self.claimed_here.take(ref.id)
        return True

    def _unclaim(self, q: QueueHandle, path: str, p: L.ClaimedName) -> bool:
        shard = os.path.basename(os.path.dirname(path))
        try:
            with self.core.renaming_into_buckets(q):  # back to the bucket of its send second (GlusterFS: locked)
                self.core.requeue(q, path, p, q.ready_dir(q.ready_bucket(p.id, shard)))
        except FileNotFoundError:
            return False
        return True

    def unclaim_all(self, queue: str) -> None:
        L.check_queue_name(queue)
        q = self.core.find(queue)
        if q is None:
            return
        try:
            for path, p in list(q.claimed_files()):
                self._unclaim(q, path, p)
        except OSError as e:
            raise storage_error(e, f"unclaiming {queue!r}") from e
        finally:
            self.claimed_here.forget_queue(q.path)
        self.core.watcher.notify(q.path)


def _may_have_nacks(name: str, claimed: bool) -> bool:
    """Whether the message file ``name`` may have a nack count: not when its receive count shows
    it was never put back (a claim on its first delivery, ``<id>~1~...`` under ``claimed/``; a
    message never delivered, ``<id>~0~...``)."""
    received = name[41:43]
    return not (received == "0~" or (claimed and received == "1~"))
