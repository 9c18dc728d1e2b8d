"""How many messages a queue holds ready, at any depth, without listing the queue on every call.

A process keeps, per queue, the count of every ready bucket it has listed, with the bucket
directory's modification time when it listed it (and the same for the ``ready/`` directory and each
``ksec`` directory, whose entries are buckets). A directory's modification time changes whenever a
name is added to it or removed from it, so a bucket whose time has not changed still holds the
count it was listed with; a count is read again only where the time moved. Nothing is written: the
counts live in the memory of the process that asks (:class:`ReadyCounts`), and every node and
process keeps its own, from the same directories.

**Which directories are looked at (a ``stat`` each) on a call**, standard and dedup queues (a
bucket is a second of sends, ``ready/<ksec>/<bucket>/``, see :mod:`spoolq.store.layout`):

* ``ready/``, and every ``ksec`` directory it holds: a bucket made or removed (a send into a new
  second, a release into an emptied and removed bucket, a poller removing an emptied one) changes
  the ``ksec`` directory's time. One ``stat`` per thousand seconds the backlog spans (87 for a day).
* the **head**: buckets oldest first until :data:`HEAD_BUCKETS` non-empty ones holding
  :data:`HEAD_MESSAGES` messages: pollers claim within their listing of the oldest buckets,
  retention expires there, and a released message returns to the bucket it was sent in, which
  its claim took it from;
* the **tail**: buckets from :data:`TAIL_SECONDS` before the last call on, and any dated later (a
  node whose clock is ahead): sends, and delays that came due between two calls (a delayed message
  lands in the bucket of its send);
* the buckets that claims and delays name: a claim or delayed file that appeared or went since the
  last call (the counts of claimed and delayed messages list them anyway) names the bucket its
  message left or went to (a claim's id gives its second; a delayed file's name its bucket): a
  long delay that came due lands in the bucket of its send, anywhere in the backlog;
* buckets listed within :data:`RACY_SECONDS` of their last change (a change in the same tick of the
  file system's clock leaves the time as it was: such a bucket is listed again until it is quiet);
* :data:`SWEEP_BUCKETS` more in turn, round the whole queue, for what nothing above names (a
  message deleted by id from the middle of a backlog, a copy restored from a backup).

When the queue has at most :data:`SWEEP_BUCKETS` buckets, or holds fewer messages than the
caller's ``limit``, every bucket is looked at: the count is then as exact as a listing
(``exact``). Beyond, a change in the middle of a backlog that none of the above names is counted
once the sweep reaches its bucket. A bucket never listed by this process (its first call, a cold
start) is listed within :data:`COLD_SECONDS` a call; buckets beyond that are estimated from the
average of the buckets listed so far when first met (``exact`` False), and the next calls list them.

FIFO queues (``ready/<group>/``) look at every group directory on every call (a ``stat`` each) and
list again those whose time moved: the cost grows with the number of groups, not of messages.

The cost of a call, once every bucket was listed, is a ``stat`` of each directory named above,
plus a listing of each that changed (the head and tail buckets under load): it does not grow with
the number of messages. Memory: about 24 bytes per bucket (arrays of a ``ksec`` directory's
thousand slots): a backlog sent over a whole day, 86,400 buckets, costs 2 MiB per process.
"""

from __future__ import annotations

import array
import bisect
import errno
import itertools
import os
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from spoolq.store import layout as L
from spoolq.store.fileops import GONE

#: the head of the queue looked at on every call: buckets oldest first until this many non-empty
#: ones and :data:`HEAD_MESSAGES` messages
HEAD_BUCKETS = 8
#: twice what a poller lists at once (``cursor.REFILL_TARGET``): pollers claim within their
#: listing of the oldest buckets, and a claim taken and acknowledged between two calls is seen only
#: in its bucket
HEAD_MESSAGES = 1024
#: buckets of the seconds since the last call, and this many before it, looked at on every call
#: (senders write there; a delay that came due between two calls lands in the bucket of its send)
TAIL_SECONDS = 10
#: buckets looked at in turn on each call, round the whole queue (and the size up to which every
#: bucket is looked at)
SWEEP_BUCKETS = 64
#: a listing made within this long of its directory's last change is made again on the next call
#: (file system clocks tick coarsely; network file systems' clocks may lag)
RACY_SECONDS = 2.0
#: time a call spends, at most, listing buckets this process never listed (at least one); the
#: rest is estimated meanwhile from the average of the buckets listed
COLD_SECONDS = 0.1

_RACY_NS = int(RACY_SECONDS * 1e9)
_ABSENT = -2  # a slot whose bucket does not exist
_UNKNOWN = -1  # a bucket that exists and was never listed


def _gone(e: OSError) -> bool:
    """Whether ``e`` says the directory is not there (any more): removed, maybe through another
    mount, or a name that is no directory."""
    return e.errno in GONE or e.errno == errno.ENOTDIR


def _names(path: str) -> list[str] | None:
    """A directory's names, or None if it is gone."""
    try:
        return os.listdir(path)
    except OSError as e:
        if _gone(e):
            return None
        raise


def _count(path: str) -> int | None:
    """Entries of a directory, or None if it is gone."""
    names = _names(path)
    return None if names is None else len(names)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError as e:
        if _gone(e):
            return None
        raise


class _Ksec:
    """The buckets of one ``ksec`` directory: slot ``i`` is bucket ``<ksec><i:03d>``."""

    __slots__ = ("counts", "listed", "mtime", "mtimes", "slots")

    def __init__(self) -> None:
        self.mtime = 0  # of the ksec directory when its names were last read (0: never)
        self.listed = 0  # time.time_ns() just before that
        self.counts = array.array("l", [_ABSENT]) * 1000
        self.mtimes = array.array("q", [0]) * 1000
        self.slots: list[int] = []  # the present slots, ascending


@dataclass
class _Queue:
    ino: int = -1
    mtime: int = 0  # of ready/ when its names were last read
    listed: int = 0
    ksecs: dict[str, _Ksec] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # ksec names, sorted
    total: int = 0  # sum of the known counts
    known: int = 0  # buckets listed
    unknown: int = 0  # buckets present but never listed
    #: buckets listed when they were first met, oldest first, and the messages they held: the
    #: sample unlisted buckets are estimated from (the head and the tail, listed first, are not
    #: like the rest of a backlog)
    sampled: int = 0
    sampled_messages: int = 0
    racy: set[str] = field(default_factory=set)  # buckets to list again on the next call
    sweep: str = ""  # the bucket the sweep goes on after
    last_call: int = 0  # time.time_ns() of the last call
    claimed: frozenset[str] = frozenset()
    delayed: frozenset[str] = frozenset()
    groups: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # FIFO: group -> (mtime, listed, count)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Pass:
    """One call's work on one standard or dedup queue (the queue's lock is held)."""

    def __init__(self, q: _Queue, ready: str, now_ns: int) -> None:
        self.q, self.ready, self.now = q, ready, now_ns
        self.cold_until = time.perf_counter() + COLD_SECONDS
        self.cold_listed = 0
        self.seen: set[str] = set()

    # ------------------------------------------------------------ directories

    def refresh_ready(self) -> None:
        """Read ``ready/``'s names again if it changed: ksec directories made or removed."""
        q = self.q
        try:
            st = os.stat(self.ready)
        except OSError as e:
            if not _gone(e):
                raise
            st = None
        if st is None or st.st_ino != q.ino:
            q.ksecs, q.order, q.total, q.known, q.unknown, q.racy = {}, [], 0, 0, 0, set()
            q.sampled = q.sampled_messages = 0
            q.mtime, q.ino = 0, -1 if st is None else st.st_ino
            if st is None:
                return
        if st.st_mtime_ns == q.mtime and q.mtime + _RACY_NS <= q.listed:
            return
        listed = time.time_ns()
        names = _names(self.ready)
        if names is None:
            return
        q.mtime, q.listed = st.st_mtime_ns, listed
        wanted = {n for n in names if L.KSEC_RE.fullmatch(n)}
        for gone in [k for k in q.ksecs if k not in wanted]:
            self._drop_ksec(gone)
        for k in wanted - q.ksecs.keys():
            q.ksecs[k] = _Ksec()
        q.order = sorted(q.ksecs)

    def _drop_ksec(self, k: str) -> None:
        ks = self.q.ksecs.pop(k)
        for i in list(ks.slots):
            self._forget(ks, i)

    def _forget(self, ks: _Ksec, i: int) -> None:
        q, c = self.q, ks.counts[i]
        if c == _ABSENT:
            return
        if c == _UNKNOWN:
            q.unknown -= 1
        else:
            q.known -= 1
            q.total -= c
        ks.counts[i] = _ABSENT
        del ks.slots[bisect.bisect_left(ks.slots, i)]

    def refresh_ksec(self, k: str) -> None:
        """Read a ksec directory's names again if it changed: buckets made or removed."""
        ks = self.q.ksecs.get(k)
        if ks is None:
            return
        kdir = f"{self.ready}/{k}"
        m = _mtime(kdir)
        if m is None:
            self._drop_ksec(k)
            self.q.order.remove(k)
            return
        if m == ks.mtime and ks.mtime + _RACY_NS <= ks.listed:
            return
        listed = time.time_ns()
        names = _names(kdir)
        if names is None:
            return
        ks.mtime, ks.listed = m, listed
        there = {L.bucket_slot(b) for b in names if L.is_bucket_in(b, k)}
        for i in [i for i in ks.slots if i not in there]:
            self._forget(ks, i)
        new = [i for i in there if ks.counts[i] == _ABSENT]
        for i in new:
            ks.counts[i], ks.mtimes[i] = _UNKNOWN, 0
        if new:
            ks.slots = sorted([*ks.slots, *new])
            self.q.unknown += len(new)

    # ------------------------------------------------------------ buckets

    def check(self, bucket: str, sample: bool = False) -> int:
        """Look at one bucket (list it again if it changed); its count (0 if it is not there, or
        not listed yet). ``sample``: a bucket listed for the first time here joins the sample
        unlisted buckets are estimated from."""
        q = self.q
        k, i = L.bucket_place(bucket)
        ks = q.ksecs.get(k)
        if bucket in self.seen:
            return max(ks.counts[i], 0) if ks is not None else 0
        self.seen.add(bucket)
        if ks is None:
            if _mtime(f"{self.ready}/{k}") is None:
                return 0
            ks = q.ksecs[k] = _Ksec()  # its other buckets: once its directory is read
            q.order = sorted(q.ksecs)
        c = ks.counts[i]
        if c == _UNKNOWN and not self.cold_allowed():
            return 0
        path = f"{self.ready}/{k}/{bucket}"
        m = _mtime(path)
        if m is None:
            self._forget(ks, i)
            q.racy.discard(bucket)
            return 0
        if c >= 0 and m == ks.mtimes[i] and bucket not in q.racy:
            return c
        listed = time.time_ns()
        n = _count(path)
        if n is None:
            self._forget(ks, i)
            q.racy.discard(bucket)
            return 0
        if c == _ABSENT:
            bisect.insort(ks.slots, i)
            q.known += 1
        elif c == _UNKNOWN:
            q.unknown -= 1
            q.known += 1
            self.cold_listed += 1
            if sample:
                q.sampled, q.sampled_messages = q.sampled + 1, q.sampled_messages + n
        else:
            q.total -= c
        q.total += n
        ks.counts[i], ks.mtimes[i] = n, m
        if m + _RACY_NS > listed:
            q.racy.add(bucket)
        else:
            q.racy.discard(bucket)
        return n

    def cold_allowed(self) -> bool:
        """Whether this call may still list a bucket never listed (module docstring)."""
        return self.cold_listed == 0 or time.perf_counter() < self.cold_until

    def unknown(self, bucket: str) -> bool:
        """Whether a present bucket was never listed by this process."""
        k, i = L.bucket_place(bucket)
        ks = self.q.ksecs.get(k)
        return ks is not None and ks.counts[i] == _UNKNOWN

    def buckets(self, after: str = "") -> Iterator[str]:
        """Every present bucket after ``after``, oldest first (from a snapshot of each ksec's
        slots: a caller may check buckets on the way)."""
        first_k = L.ksec(after)
        for k in list(self.q.order):
            if k < first_k:
                continue
            ks = self.q.ksecs.get(k)
            if ks is None:
                continue
            slots = ks.slots
            start = bisect.bisect_right(slots, L.bucket_slot(after)) if k == first_k else 0
            for i in slots[start:]:
                yield L.slot_bucket(k, i)


class ReadyCounts:
    """Ready counts of the queues this process asks about (module docstring)."""

    def __init__(self) -> None:
        self._queues: dict[str, _Queue] = {}
        self._lock = threading.Lock()

    def _queue(self, ready: str) -> _Queue:
        with self._lock:
            q = self._queues.get(ready)
            if q is None:
                q = self._queues[ready] = _Queue()
            return q

    def forget(self, ready: str) -> None:
        """Drop what is kept of a queue (deleted)."""
        with self._lock:
            self._queues.pop(ready, None)

    def standard(self, ready: str, claimed: Collection[str], delayed: Collection[str], limit: int,
                 now_ns: int | None = None) -> tuple[int, bool]:
        """(ready messages, exact) of a standard or dedup queue whose ``ready/`` is ``ready``;
        ``claimed`` and ``delayed``: the names of its claimed and delayed files now; ``limit``:
        every bucket is looked at while the queue holds fewer messages than this."""
        q = self._queue(ready)
        with q.lock:
            p = _Pass(q, ready, time.time_ns() if now_ns is None else now_ns)
            p.refresh_ready()
            if q.ino < 0:  # no such queue (deleted): nothing kept
                self.forget(ready)
                return 0, True
            for k in list(q.order):
                p.refresh_ksec(k)
            claimed_now, delayed_now = frozenset(claimed), frozenset(delayed)
            touched = {L.name_bucket(n) for n in claimed_now.symmetric_difference(q.claimed)}
            touched.update(L.delayed_bucket(n) for n in delayed_now.symmetric_difference(q.delayed))
            q.claimed, q.delayed = claimed_now, delayed_now
            every = q.known + q.unknown <= SWEEP_BUCKETS or q.total < limit
            if every:
                for b in list(p.buckets()):
                    p.check(b, sample=True)
            else:
                self._partial(p, touched, p.now)
            q.last_call = p.now
            exact = every and q.unknown == 0
            if q.unknown:
                per_bucket = q.sampled_messages / q.sampled if q.sampled else q.total / max(q.known, 1)
                return q.total + round(q.unknown * per_bucket), False
            return q.total, exact

    @staticmethod
    def _partial(p: _Pass, touched: set[str], now_ns: int) -> None:
        q = p.q
        nonempty = messages = 0
        for b in p.buckets():  # the head
            n = p.check(b)
            nonempty, messages = nonempty + (n > 0), messages + n
            if nonempty >= HEAD_BUCKETS and messages >= HEAD_MESSAGES:
                break
        since = min(now_ns, q.last_call or now_ns) // 1_000_000
        tail = L.std_bucket(since - TAIL_SECONDS * 1000)
        for b in list(p.buckets(after=tail)):
            p.check(b)
        for b in sorted(touched | q.racy):
            if L.STD_BUCKET_RE.fullmatch(b):
                p.check(b)
        swept = 0
        for b in itertools.islice(p.buckets(after=q.sweep), SWEEP_BUCKETS):
            p.check(b)
            q.sweep, swept = b, swept + 1
        if swept < SWEEP_BUCKETS:
            q.sweep = ""  # round the queue: the next call starts from its head
        if q.unknown:
            for b in p.buckets():
                if not p.cold_allowed():
                    break
                if p.unknown(b):
                    p.check(b, sample=True)

    def fifo(self, ready: str) -> tuple[int, bool]:
        """(ready messages, exact) of a FIFO queue: every group directory looked at."""
        q = self._queue(ready)
        with q.lock:
            names = _names(ready)
            if names is None:
                self.forget(ready)
                return 0, True
            groups: dict[str, tuple[int, int, int]] = {}
            total = 0
            for g in names:
                path = f"{ready}/{g}"
                m = _mtime(path)
                if m is None:
                    continue
                old = q.groups.get(g)
                if old is not None and old[0] == m and m + _RACY_NS <= old[1]:
                    groups[g] = old
                else:
                    listed = time.time_ns()
                    n = _count(path)
                    if n is None:
                        continue
                    groups[g] = (m, listed, n)
                total += groups[g][2]
            q.groups = groups
            return total, True
