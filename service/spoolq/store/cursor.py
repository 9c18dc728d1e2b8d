"""A process's cursor over the oldest ready buckets of a standard or dedup queue.

Poll never lists a whole queue: the cursor lists the oldest non-empty bucket(s) once and
hands out candidates until they are spent; then it lists again. At most once a second it
re-lists bucket names only, so an older bucket that reappeared (a requeue, a delay that came
due, another node with a slower clock) is seen within that second.

**Order.** Pollers split a listing into *lanes* instead of sweeping it side by side (they all list
the same oldest buckets; a lost rename costs a system call here and a round trip on a network file
system). Every process that polls a standard or dedup queue registers as a poller of the data
directory by holding one byte of ``<root>/pollers.lock`` (a record lock, :class:`HomeLane`; the
first free byte, so the held bytes stay packed from 0), on every node sharing the root. The
number of lanes is the number of bytes held, and a process's *home* lane the rank of its byte
among them, counted again :data:`LIVE_RECHECK_FIRST` seconds
after a count that changed, then twice as long each time up to every :data:`LIVE_RECHECK`
seconds: as many lanes as live pollers, on one node or several, without
being told (``peers == 0``, the default), or ``peers + 1`` lanes when told (``--peers``, which
then overrides the count). A process that polls once keeps its byte until it exits (a crash
frees it: the kernel, or the shared file system, drops its locks). A poller alone, or on a file
system without record locks, has one lane: a listing is handed out in id order, oldest first.
A message's lane is the last three hex digits of its id's random word modulo the number of
lanes: the same in every process and every listing while they count alike (two processes that
count differently for a second only order their listings differently; each still hands out
all of it). A listing is handed out as: the home lane's messages oldest first, then each other lane
in turn (the next lane first, wrapping round), newest first: what that lane's own poller, working
oldest first, reaches last. Pollers that run side by side each take their own lane and rarely try
the same rename; a poller alone drains every lane. So the order is oldest first within a lane,
and across lanes oldest first by listing (the oldest bucket, a second of sends, or the oldest
:data:`REFILL_TARGET` messages and more): a standard queue's best-effort order, as SQS gives it.

**Stale listings.** A listing goes stale as other pollers claim from it. With lanes, when
:data:`STALE_AFTER` candidates in a row were taken by someone else (:meth:`ReadyCursor.report`),
the rest of the listing is dropped and the next take lists again. Without lanes every poller
sweeps the same order, so a fresh listing would only meet them again, at the cost of listing the
bucket: the cursor goes on through its listing. ``lost`` counts candidates taken by someone else
(how much pollers got in each other's way).

A bucket the cursor finds empty is removed at once if it is older than ``keep_from`` (the write
window's start): on local disks and CephFS an rmdir and a rename into the directory are ordered,
and a release or a late send re-creates the bucket (:func:`~spoolq.store.fileops.rename_into`). On
GlusterFS the two can hang each other, so there the caller passes ``""`` (nothing is old enough)
and maintenance removes empty buckets under the queue's bucket lock (:mod:`spoolq.store.bucket_guard`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator

from spoolq.store import damage, process
from spoolq.store.layout import LANE_DIGITS, lane_digits

Buckets = Callable[[], Iterator[tuple[str, str]]]
#: candidates gathered per refill: a refill lists several buckets, so it should be rare enough
#: (< 1 poll in 100 when buckets hold a few messages each) to stay out of the p99
REFILL_TARGET = 512
#: candidates in a row found claimed by someone else after which the rest of a listing is dropped
STALE_AFTER = 4
#: seconds between two counts of the live pollers once the count is steady (a ``lockf`` per byte
#: past this process's: a round trip each on a network file system), and after a count that
#: changed (doubling from there while it stays the same)
LIVE_RECHECK = 1.0
LIVE_RECHECK_FIRST = 0.05
#: bytes of ``pollers.lock`` a process takes its lane among when lanes follow the live pollers
MAX_LANES = 1025
#: free bytes in a row past the highest held one after which a count of live pollers stops
_GAP = 8


class ReadyCursor:
    """A process's view of the oldest ready bucket of one standard/dedup queue.

    ``buckets`` yields ``(bucket, directory)`` oldest first, lazily (see
    ``QueueHandle.ready_buckets``); candidates are ``(directory, file name)``.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[tuple[str, str]] = []
        self.pos = 0
        self.bucket = ""
        self.checked = 0.0
        #: candidates handed out here that another poller had claimed first
        self.lost = 0
        self._streak = 0
        #: whether the listing is split into lanes (``peers > 0``): only then is a run of lost
        #: candidates a sign the listing is stale rather than that other pollers sweep beside this one
        self._lanes = False
        #: (peers, home) the listing was split for
        self._split = (0, 0)

    def take(self, buckets: Buckets, n: int, peers: int, home: int, keep_from: str) -> list[tuple[str, str]]:
        """Up to ``n`` candidates, in the order of the module docstring (``home``: this process's
        lane when ``peers > 0``). A bucket found empty is removed if it is before ``keep_from``
        (the write window senders are renaming into; ``""``: none, see the module docstring)."""
        with self.lock:
            now = time.monotonic()
            if self.pos < len(self.items) and now - self.checked > 1.0:
                # bounded staleness: an older bucket may have reappeared (requeue, other node)
                self.checked = now
                first = next(buckets(), None)
                if first is not None and first[0] < self.bucket:
                    self.pos = len(self.items)
            if self.pos >= len(self.items) or (peers, home) != self._split:  # lanes changed: split again
                self._refill(buckets, peers, home, keep_from)
                self.checked = now
            out = self.items[self.pos:self.pos + n]
            self.pos += len(out)
            return out

    def report(self, lost: int, lost_since_last_claim: int, claimed: bool) -> None:
        """What became of candidates taken: ``lost`` of them were claimed by someone else first,
        the last ``lost_since_last_claim`` of them after this poller's last claim (all of them
        when ``claimed`` is false). Enough in a row drop the rest of the listing."""
        with self.lock:
            self.lost += lost
            if not self._lanes:
                return  # every poller sweeps the same order: a fresh listing would meet them again
            self._streak = lost_since_last_claim + (0 if claimed else self._streak)
            if self._streak >= STALE_AFTER:
                self._streak = 0
                self.pos = len(self.items)

    def _refill(self, buckets: Buckets, peers: int, home: int, keep_from: str) -> None:
        names_by_dir: list[tuple[str, list[str]]] = []
        listed = 0
        first = ""
        for bucket, path in buckets():
            names = damage.listing(path, "listing a ready bucket")  # refused: passed over, reported
            if not names:
                if bucket < keep_from:
                    with contextlib.suppress(OSError):
                        os.rmdir(path)
                continue
            first = first or bucket
            names_by_dir.append((path, names))
            listed += len(names)
            if listed >= REFILL_TARGET:
                break
        self.bucket = first
        self._streak = 0
        self._lanes = peers > 0
        self._split = (peers, home)
        if peers <= 0:
            items = [(path, n) for path, names in names_by_dir for n in sorted(names)]
        else:
            items = _by_lanes(names_by_dir, peers + 1, home)
        self.items, self.pos = items, 0


def _by_lanes(names_by_dir: list[tuple[str, list[str]]], count: int, home: int) -> list[tuple[str, str]]:
    """The listing in the order the module docstring gives: lane ``home`` oldest first, then
    lanes ``home + 1``, ``home + 2``... (modulo ``count``), each newest first."""
    lane_of, digits_of = _lane_table(count).get, lane_digits
    lanes: list[list[tuple[str, str]]] = [[] for _ in range(count)]
    for path, names in names_by_dir:
        for n in names:  # a name that is not a message's goes first: the poll quarantines it
            lanes[lane_of(digits_of(n), home)].append((path, n))
    items = sorted(lanes[home])
    for k in range(1, count):
        items.extend(sorted(lanes[(home + k) % count], reverse=True))
    return items


@functools.cache
def _lane_table(count: int) -> dict[str, int]:
    """Lane by the last three hex digits of an id's random word (a dictionary lookup costs half
    of parsing the digits: a refill sorts a whole bucket into lanes)."""
    return {f"{i:0{LANE_DIGITS}x}": i % count for i in range(16 ** LANE_DIGITS)}


class HomeLane:
    """This process's home lane, and the number of lanes (see the module docstring), for every
    queue of one data directory: one byte of ``<root>/pollers.lock`` record-locked (``lockf``) by
    each process that polls. Following the live pollers (:meth:`lanes` without peers), the first
    free byte from 0, and the home lane is its rank among the bytes held; told a count
    (``--peers``), byte ``k`` is lane ``k``, tried from ``pid % count`` on. A process
    that finds every lane taken, or cannot lock (a file system without record locks), keeps the
    first it tried, and counts one lane when following the live pollers.

    Lanes only spare pollers lost renames; two processes in one lane poll as correctly as ever,
    just side by side. So nothing here waits or fails: a lock is tried without blocking, a crash
    frees the dead process's lane (the kernel, or the shared file system, drops its locks), and a
    forked child, which holds no lock of its parent's, takes a lane of its own. The locks live as
    long as the descriptor (closed by :meth:`close`; closing any other descriptor of the file in
    the process would drop them too, and nothing else opens it).
    """

    def __init__(self, lock_file: str) -> None:
        self._file = lock_file
        self._guard = threading.Lock()
        self._fd = -1
        self._key = (-1, -1)  # (pid, count) the lane was taken for (count 0: following the live pollers)
        self._lane = 0
        self._live = (1, 0)  # (lanes, home lane) of the live pollers when last counted
        self._live_until = 0.0  # time.monotonic() when they are counted again
        self._live_step = LIVE_RECHECK_FIRST  # seconds from the last count to the next

    def lanes(self, peers: int) -> tuple[int, int]:
        """(lanes, this process's home lane): ``peers + 1`` lanes when told (``peers > 0``), the
        home lane its byte; else one per live poller (the bytes held, this process's included),
        the home lane its byte's rank among them, counted again as the module docstring says;
        ``(1, 0)`` where record locks fail."""
        if peers > 0:
            return peers + 1, self.lane(peers + 1)
        if self._key == (process.pid(), 0) and time.monotonic() < self._live_until:
            return self._live
        with self._guard:
            if self._key != (process.pid(), 0):
                self._lane = self._take(MAX_LANES, first=0)
                self._key = (process.pid(), 0)
                self._live_until = 0.0
            now = time.monotonic()
            if now >= self._live_until:
                live = self._count_live()
                # soon again after a change (pollers starting together), then less and less often
                self._live_step = LIVE_RECHECK_FIRST if live != self._live else min(2 * self._live_step,
                                                                                  LIVE_RECHECK)
                self._live = live
                self._live_until = now + self._live_step
            return self._live

    def lane(self, count: int) -> int:
        """This process's home lane among ``count`` lanes (a byte tried from ``pid % count`` on)."""
        if self._key == (process.pid(), count):
            return self._lane
        with self._guard:
            if self._key != (process.pid(), count):
                self._lane = self._take(count)
                self._key = (process.pid(), count)
            return self._lane

    def _count_live(self) -> tuple[int, int]:
        """(lanes, home lane) of the live pollers: the bytes held (looked at from 0 until
        :data:`_GAP` free bytes in a row past this process's byte and every held one found; a byte
        is tried and let go at once: held means held by another process), and the rank of this
        process's byte among them. ``(1, 0)`` when this process holds none (no record locks)."""
        if self._fd < 0:
            return 1, 0
        held = below = 0
        top = self._lane
        k = 0
        while k <= top + _GAP and k < MAX_LANES:
            if k == self._lane or self._held_elsewhere(k):
                held += 1
                below += k < self._lane
                top = max(top, k)
            k += 1
        return held, below

    def _held_elsewhere(self, k: int) -> bool:
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, k)
        except OSError as e:
            return e.errno in (errno.EACCES, errno.EAGAIN)
        with contextlib.suppress(OSError):
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, k)
        return False

    def _take(self, count: int, first: int | None = None) -> int:
        first = process.pid() % count if first is None else first
        self._close_fd()  # a forked child closes its copy: the parent's locks are the parent's
        try:
            self._fd = os.open(self._file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if damage.is_damage(e):
                damage.report(self._file, "taking a poll lane")  # polls go on, in lane `first`
            return first
        for k in range(count):
            lane = (first + k) % count
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, lane)
                return lane
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EAGAIN):  # no record locks here
                    break
        self._close_fd()
        return first

    def _close_fd(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1

    def close(self) -> None:
        with self._guard:
            self._close_fd()
            self._key = (-1, -1)
