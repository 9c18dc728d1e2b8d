"""The ends of claims: ack, renew, set_claim_ttl, release, unclaim_all, and whether a claim is live.

An ack renames the message's file out of its queue (into the trash, or the archive's ``acked/``):
that rename is the ack. A renewal renames a claimed file to a new expiry with a fresh token; a
release renames it back to its ready name (in two renames on ``ceph-fuse``:
:meth:`~spoolq.store.handle.QueueHandle.requeue`). A receipt names one receive: it acts on that
receive's claim (also one renewed since), and an ack by receipt also removes the message after
its claim was released or ran out, as long as nobody received it since; an id names the message,
whatever its state (renewing it by id claims a visible message).

A message present twice (a raw copy of a live root put in place, a crash between the two halves
of a claim on a shared file system) is tolerated at no cost to the common path: the ack of a
claim that this process did not make (a claim from before a start, another worker's) also
removes the message's ready copy under its name from before that claim (one ``stat``), an ack by
id that has to list its shard (below) removes every claimed copy it finds there, and maintenance
drops an expired claim whose pre-claim ready copy exists instead of requeueing it
(``expire_claims``). The ack of a claim this process made and remembers looks for no ready copy:
that claim's own rename took the ready name away, and only a copy put into the data directory
while the service runs could bring it back (a raw copy is put back through ``spoolq restore``, or
in place with the service stopped: then no claim of it is remembered).

An ack by id (EmoDB, Disque) does not know the claimed file's name: a claim made by this process
is remembered (:class:`~spoolq.store.remembered_claims.RememberedClaims`: the id's latest claimed
file), and its ack renames that file without listing anything; an id claimed elsewhere, renewed
elsewhere since (the renewal renamed it), or no longer remembered, is looked for in one listing of
its claim shard. A second claimed copy of a remembered id (only a raw copy of a live root makes
one: a poll drops a second copy it claims) then outlives the ack until its claim expires and is
delivered once more: a duplicate, never a loss.

The nack count (:mod:`spoolq.store.jobs`) of an acknowledged message goes with it, except where
the file's name shows it was never put back (a claim on its first delivery, or a message never
delivered): a nack puts a message back, so only a message received before can have a count.

:class:`ClaimEnds` is a part of the file store, built with the store's queues, the wake-ups, the
trash, the claims made here (shared with :class:`~spoolq.store.claiming.Claiming`) and the clock.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

from spoolq.errors import InvalidArgument, storage_error
from spoolq.store import layout as L
from spoolq.store.catalog import Clock, QueueCatalog
from spoolq.store.fileops import listdir, rename_into
from spoolq.store.handle import QueueHandle
from spoolq.store.model import MAX_CLAIM_TTL, QueueInfo, QueueKind, QueueRef
from spoolq.store.queue_config import check_number
from spoolq.store.remembered_claims import RememberedClaims
from spoolq.store.trash import Trash
from spoolq.store.watch import Watcher

R = TypeVar("R")


class ClaimEnds:
    def __init__(self, catalog: QueueCatalog, *, watcher: Watcher, trash: Trash, claimed_here: RememberedClaims,
                 clock: Clock) -> None:
        self.catalog = catalog
        self.watcher = watcher
        self.trash = trash
        #: the claims made here, for acks by id (see the module doc)
        self.claimed_here = claimed_here
        self.clock = clock

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _each_ref(self, queue: QueueRef, refs: Sequence[str], doing: str, op: Callable[[QueueHandle, L.Ref], R],
                  missing: R) -> tuple[list[R], QueueHandle | None]:
        """Validate the queue name and every ref first (nothing changes on bad input), then apply
        ``op`` to each ref: one answer per ref, and the queue. A queue that does not exist has
        nothing to act on: ``missing`` for each."""
        name = queue.name if isinstance(queue, QueueInfo) else L.check_queue_name(queue)
        if isinstance(refs, (str, bytes)) or not isinstance(refs, Sequence):
            raise InvalidArgument("refs must be a sequence of message ids or receipts")
        parsed = [L.parse_ref(r, name) for r in refs]
        q = self.catalog.resolve(queue)
        if q is None:
            return [missing] * len(parsed), None
        try:
            return [op(q, ref) for ref in parsed], q
        except OSError as e:
            raise storage_error(e, f"{doing} in {name!r}") from e

    def claimed_until(self, queue: QueueRef, refs: Sequence[str]) -> list[float | None]:
        """When the live claim each ref names ends (see the contract), or None."""
        now_ms = self._now_ms()

        def until(q: QueueHandle, ref: L.Ref) -> float | None:
            found = q.locate_claimed(ref)
            return found[1].expires / 1000 if found is not None and found[1].expires > now_ms else None

        return self._each_ref(queue, refs, "reading claims", until, None)[0]

    def ack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        """Acknowledge by id or receipt. A receipt acknowledges its own claim, and its message after
        the claim ran out or was released, as long as nobody received it since (the same receive
        count: SQS's "the most recent receipt handle deletes")."""
        return self._each_ref(queue, refs, "acknowledging", self._ack_one, False)[0]

    def _ack_one(self, q: QueueHandle, ref: L.Ref) -> bool:
        if ref.claimed_name is None:  # by id: the claim made here first (see the module doc)
            known = self.claimed_here.take(ref.id)
            if known is not None and known.startswith(q.path + "/claimed/") and self._finish(q, known):
                return True  # made here: no ready copy to look for (the module doc)
        acked, claims = self._ack_files(q, ref)
        known = None
        if acked and ref.claimed_name is not None:  # by receipt: the claim remembered for it ended too
            known = self.claimed_here.take(ref.id)
        for path in claims:
            if path != known:  # a claim not made here: its message may have a ready copy
                self._drop_ready_copy(q, path)
        return acked

    def _ack_files(self, q: QueueHandle, ref: L.Ref) -> tuple[bool, list[str]]:
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
        if found is None:  # released, or run out and put back: still the latest receipt?
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
            ready_dir = q.sub(L.std_ready_path(bucket))
        before = f"{ready_dir}/{L.ready_name(p.id, p.rc - 1, p.frt if p.rc > 1 else 0)}"
        if os.path.exists(before):
            with contextlib.suppress(FileNotFoundError):
                self.trash.discard(before)

    def _finish(self, q: QueueHandle, path: str, *, claimed: bool = True) -> bool:
        """Ack one file: the rename out of the queue is the ack; the unlink happens later, off the
        request path (an unlink of a freshly written file can wait for its writeback). The
        message's nack count goes with it (:mod:`spoolq.store.jobs`)."""
        try:
            if q.info.config.archive:
                os.rename(path, q.sub(f"acked/{os.path.basename(path)}~{self._now_ms():x}"))
            else:
                self.trash.discard(path)
        except FileNotFoundError:
            return False
        if q.kind is not QueueKind.FIFO and _may_have_nacks(os.path.basename(path), claimed):
            with contextlib.suppress(OSError):
                os.unlink(q.nacks_file(L.file_id(path)))
        return True

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        """Claim each message for at least ``ttl`` seconds from now, never shortening a claim."""
        return self._hold(queue, refs, ttl, extend_only=True)

    def set_claim_ttl(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        """Claim each message for exactly ``ttl`` seconds from now."""
        check_number("ttl", ttl, 0.001, MAX_CLAIM_TTL)
        return self._hold(queue, refs, ttl, extend_only=False)

    def _hold(self, queue: QueueRef, refs: Sequence[str], ttl: float, *, extend_only: bool) -> list[bool]:
        """Set each claim's end to now + ``ttl`` (``extend_only``: unless it ends later already); an
        id of a visible message claims it (see the contract's ``renew``)."""
        check_number("ttl", ttl, 0, MAX_CLAIM_TTL)
        if ttl == 0:
            return self.release(queue, refs)
        new_exp = self._now_ms() + int(ttl * 1000)
        return self._each_ref(queue, refs, "renewing claims",
                              lambda q, ref: self._hold_one(q, ref, new_exp, extend_only), False)[0]

    def _hold_one(self, q: QueueHandle, ref: L.Ref, new_exp: int, extend_only: bool) -> bool:
        found = q.locate_claimed(ref)
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
        if ref.claimed_name is not None:  # a receipt names one delivery: it claims nothing anew
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

    def release(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        """Make claimed messages visible again now."""
        out, q = self._each_ref(queue, refs, "releasing claims", self._release_one, False)
        if q is not None and any(out):
            self.watcher.notify(q.path)
        return out

    def _release_one(self, q: QueueHandle, ref: L.Ref) -> bool:
        found = q.locate_claimed(ref)
        if found is None or not q.put_back(found[0], found[1], self._now_ms()):
            return False
        self.claimed_here.take(ref.id)
        return True

    def unclaim_all(self, queue: str) -> None:
        L.check_queue_name(queue)
        q = self.catalog.find(queue)
        if q is None:
            return
        now_ms = self._now_ms()
        try:
            for path, p in list(q.claimed_files()):
                q.put_back(path, p, now_ms)
        except OSError as e:
            raise storage_error(e, f"unclaiming {queue!r}") from e
        finally:
            self.claimed_here.forget_queue(q.path)
        self.watcher.notify(q.path)


def _may_have_nacks(name: str, claimed: bool) -> bool:
    """Whether the message file ``name`` may have a nack count: not when its receive count shows
    it was never put back (a claim on its first delivery, ``<id>~1~...`` under ``claimed/``; a
    message never delivered, ``<id>~0~...``)."""
    return not (L.received_at_most_once(name) if claimed else L.never_received(name))
