"""The on-disk grammar: queue names, message ids, file names, buckets. One regex each.

Root layout (on-disk format 2; the format and what each format changed: :mod:`spoolq.store.root_format`)::

    <root>/
      format                          the on-disk format, its features and the version that wrote it
                                      (JSON, replaced whole); read before anything else at every start
      tmp/<node>-<pid>-<n>.tmp        partial writes of small records (queue metadata, dedup and FIFO
                                      markers, move status); swept when their writer is dead or old
      tmp/<node>-<pid>/<n>.tmp        a process's own message files being written, only where the file
                                      system refuses O_TMPFILE (message_files.py); swept when its process is dead
      queues/<qdir>/                  one directory per queue (qdir: see ``queue_dir_name``); its
                                      mtime: the last shared maintenance pass (maintenance.py)
        meta.json                     kind, config, tags; replaced atomically, never edited
        lock                          FIFO queues only: the record lock (lockf) over its group state, held
                                      by sends, claims and maintenance's removal of idle groups; made
                                      with the queue, as every lock file here (made at first use in a
                                      queue an older release made after the upgrade)
        fifo.last                     FIFO queues only: the last id issued (keeps ids increasing)
        dedup.lock                    dedup queues only: one record-lock byte per marker stripe
        buckets.lock                  standard and dedup queues: on GlusterFS the record lock under which
                                      maintenance removes empty buckets (shared by renames into old
                                      ones; bucket_guard.py)
        settings.lock                 the record lock (lockf) held while meta.json is read, changed and
                                      replaced (QueueCatalog.change_queue)
        ready/<ksec>/<bucket>/<id>~<rc>~<frt>                visible messages (FIFO: ready/<bucket>/...)
        delayed/<due-s>/<id>~<rc>~<frt>~<due>~<bucket>       not visible before <due> (ms, hex)
        claimed/<shard>/<id>~<rc>~<frt>~<exp>~<tok>          claimed until <exp> (ms, hex)
        dedup/<sha256>                dedup: pending unsurfaced copy; FIFO: dedup window record
        acked/<claimed-name>~<ack>    archive-enabled queues: acknowledged, awaiting compaction
        archive-work/<segment>/       compaction in progress (see archive.py)
      archive/<adir>/<segment>.jsonl  rolling archive segments, one JSON record a line (adir: see
                                      ``archive_dir_name``: qdir with ``+`` for ``:``)
      batches/<qdir>/<token>          batch claims: what a token claimed, for its fetch again (batches.py)
      moves/<ref>.json                move status; moves/<ref>.cancel asks a move to stop;
                                      moves/<ref>.lease-<heartbeat ms>: who took over a stale move
      pollers.lock                    byte k record-locked by the process whose poll lane is k (cursor.py);
                                      made with the root
      trash/                          purged queues and directories awaiting rmtree
      corrupt/                        files whose checksum failed (never acknowledged writes)

Message files are never written under their names or in a directory every process shares: each
is written whole into an unnamed inode (``O_TMPFILE``) in the directory it goes to and then linked
under its name there, or, where the file system refuses ``O_TMPFILE``, written in its process's own
``tmp/<node>-<pid>/`` and renamed into place (see :mod:`spoolq.store.message_files`).

Names inside a queue:

* ``id``: 40 lowercase hex digits = 20 bytes: 6 bytes of milliseconds since the epoch,
  4 bytes of node hash, 4 bytes of per-process counter, 4 random bytes, and a 2-byte
  checksum of the first 18 bytes plus the queue name (an id sent to the wrong queue is
  recognised). Ids sort by creation time.
* ``rc``: receive count (decimal). ``frt``: first-receive time in ms (hex, ``0`` = never).
* ``bucket``: standard and dedup queues: the id's second (11 decimal digits), so a
  message always returns to the bucket it was sent in; FIFO queues: ``g`` + 16 hex of
  SHA-256 of the message group id, so one directory holds one group in order.
* ``ksec``: the first 8 digits of a standard bucket (its 1000-second group). Buckets live
  in ``ready/<ksec>/`` so that no directory listing on a hot path grows with the age of a
  backlog: a queue filled one message a second for a day has 87 ksec directories of at most
  1000 buckets, not 86,400 buckets in one directory.
* ``shard`` of a claim: standard/dedup: the id's last random hex digit (16 shards, so
  finding a claim by id lists 1/16 of the in-flight set); FIFO: the group bucket. A group
  is delivered from its head up to its first live claim; the shard directory's mtime is the
  group's last claim, release or delete, which places it behind groups nobody received.
* ``tok``: 16 random hex digits, unique to the claimant. A claim renames to a name no
  one else can choose, so "rename returned 0" means "mine" even on GlusterFS.
* A receipt (SQS receipt handle) is ``<shard>:<claimed name>``.

Each state's names parse into a type of their own (:class:`ReadyName`, :class:`ClaimedName`
with its expiry and token, :class:`DelayedName` with its due time and target bucket), so the
fields after ``<frt>`` are never read with the wrong meaning.
"""

from __future__ import annotations

import array
import hashlib
import itertools
import os
import re
import struct
import threading
import zlib
from dataclasses import dataclass

from spoolq.store import process
from spoolq.store.model import HEX_ID_RE as HEX_ID_RE
from spoolq.store.model import ID_RE as ID_RE
from spoolq.store.model import QUEUE_NAME_RE as QUEUE_NAME_RE
from spoolq.store.model import RECEIPT_RE as RECEIPT_RE
from spoolq.store.model import check_message_id as check_message_id
from spoolq.store.model import check_queue_name as check_queue_name
from spoolq.store.model import id_checksum, quick_init

STD_BUCKET_RE = re.compile(r"^\d{11}$")
FIFO_BUCKET_RE = re.compile(r"^g[0-9a-f]{16}$")
SHARD_RE = re.compile(r"^(?:[0-9a-f]|g[0-9a-f]{16})$")
READY_RE = re.compile(r"^([0-9a-f]{40})~(\d{1,9})~([0-9a-f]{1,12})$")
DELAYED_RE = re.compile(r"^([0-9a-f]{40})~(\d{1,9})~([0-9a-f]{1,12})~([0-9a-f]{1,12})~(\d{11}|g[0-9a-f]{16})$")
CLAIMED_RE = re.compile(r"^([0-9a-f]{40})~(\d{1,9})~([0-9a-f]{1,12})~([0-9a-f]{1,12})~([0-9a-f]{16})$")
MOVE_REF_RE = re.compile(r"^[A-Z2-7]{42}$")
#: ``moves/<ref>.json``: a move's status (moves.py)
MOVE_STATUS_SUFFIX = ".json"

_MAX_PLAIN_DIR = 200


def queue_dir_name(name: str) -> str:
    """The directory name of a (validated) queue: the name itself, or a hashed form if long."""
    if len(name) <= _MAX_PLAIN_DIR:
        return name
    return name[:150] + "~" + hashlib.sha256(name.encode()).hexdigest()[:32]


def archive_dir_name(name: str) -> str:
    """The archive directory of a (validated) queue: its ``queue_dir_name`` with ``+`` for ``:``.

    Spark and Hadoop cannot list a directory entry whose name has a ``:`` (``sqs:123...:q`` reads as
    a URI scheme), and ``+`` is outside the queue-name alphabet, so the mapping is one to one. The
    records inside keep the queue's real name."""
    return queue_dir_name(name).replace(":", "+")


def move_status_name(ref: str) -> str:
    """The name of a move's status file in ``moves/``."""
    return ref + MOVE_STATUS_SUFFIX


def move_cancel_name(ref: str) -> str:
    """The name of the file that asks a move to stop (moves.py)."""
    return f"{ref}.cancel"


def move_lease_prefix(ref: str) -> str:
    """What the names of a move's leases start with: ``<ref>.lease-<heartbeat ms>`` (moves.py)."""
    return f"{ref}.lease-"


def move_ref_of(name: str) -> str | None:
    """The ref of the move whose status file is ``name``; None for any other file of ``moves/``."""
    return name[:-len(MOVE_STATUS_SUFFIX)] if name.endswith(MOVE_STATUS_SUFFIX) else None


def fifo_bucket(group_id: str) -> str:
    return "g" + hashlib.sha256(group_id.encode()).hexdigest()[:16]


def std_bucket(ms: int) -> str:
    return f"{ms // 1000:011d}"


KSEC_RE = re.compile(r"^\d{8}$")


def ksec(bucket: str) -> str:
    """The ksec directory of a standard bucket: its first 8 digits, its 1000-second group (of a
    bucket used as a cut-off, the group it falls in)."""
    return bucket[:8]


def bucket_place(bucket: str) -> tuple[str, int]:
    """Where a standard bucket lives: its ksec directory (first 8 digits) and its slot there (last
    3 digits, 0-999); :func:`slot_bucket` is the inverse."""
    return bucket[:8], int(bucket[8:])


def bucket_slot(bucket: str) -> int:
    """A standard bucket's slot in its ksec directory: its last 3 digits (0-999)."""
    return int(bucket[8:])


def slot_bucket(ksec_dir: str, slot: int) -> str:
    """The standard bucket at ``slot`` (0-999) of the ksec directory ``ksec_dir``."""
    return f"{ksec_dir}{slot:03d}"


def is_bucket_in(name: str, ksec_dir: str) -> bool:
    """Whether ``name`` (an entry of the ksec directory ``ksec_dir``) is a standard bucket of it."""
    return len(name) == 11 and name.startswith(ksec_dir) and name.isdigit()


def std_ready_path(bucket: str) -> str:
    """The directory of a standard queue's ready bucket, relative to the queue directory."""
    return f"ready/{bucket[:8]}/{bucket}"


def ready_path(bucket: str) -> str:
    """The directory of a ready bucket (standard, or a FIFO group's), relative to the queue directory."""
    if STD_BUCKET_RE.fullmatch(bucket):
        return std_ready_path(bucket)
    return f"ready/{bucket}"



# ---------------------------------------------------------------- ids

#: an id's first 18 bytes: milliseconds (high 16 bits, low 32), node hash, counter, random word
_ID_HEAD = struct.Struct(">HIIII")


class IdFactory:
    """Makes time-ordered ids unique across nodes, processes and threads.

    An id's head is packed in one step (:data:`_ID_HEAD`: the milliseconds as 2 + 4 bytes, the
    node hash, the counter, 4 random bytes) and its checksum is :func:`id_checksum` of it, as
    ``layout`` describes the id; :meth:`new_ids` makes a batch's ids under one taking of the lock."""

    #: random 4-byte words drawn from the OS at once: one getrandom(2) per 1,024 ids, not one per id
    RANDOM_WORDS = 1024

    def __init__(self, node_id: str) -> None:
        self._node = zlib.crc32(node_id.encode())
        self._lock = threading.Lock()
        self._counter = int.from_bytes(os.urandom(4), "big")
        self._pid = process.pid()
        self._random = array.array("I")
        self._used = 0

    def _forked(self) -> None:
        """In a forked child: never share a counter or random bytes with the parent."""
        self._pid = process.pid()
        self._counter = int.from_bytes(os.urandom(4), "big")
        self._random, self._used = array.array("I"), 0

    def _refill(self, n: int) -> None:
        self._random, self._used = array.array("I", os.urandom(4 * max(self.RANDOM_WORDS, n))), 0

    def new_id(self, queue: str, ms: int) -> str:
        with self._lock:
            if process.pid() != self._pid:
                self._forked()
            counter = self._counter = (self._counter + 1) & 0xFFFFFFFF
            if self._used >= len(self._random):
                self._refill(1)
            used = self._used
            self._used = used + 1
            random = self._random[used]
        head = _ID_HEAD.pack(ms >> 32, ms & 0xFFFFFFFF, self._node, counter, random)
        return (head + (zlib.crc32(head + queue.encode()) & 0xFFFF).to_bytes(2, "big")).hex()  # id_checksum

    def new_ids(self, queue: str, ms: int, n: int) -> list[str]:
        """``n`` ids for ``queue`` at ``ms``, as ``n`` calls of :meth:`new_id` make them."""
        with self._lock:
            if process.pid() != self._pid:
                self._forked()
            counter = self._counter
            self._counter = (counter + n) & 0xFFFFFFFF
            if self._used + n > len(self._random):
                self._refill(n)
            used = self._used
            self._used = used + n
            randoms = self._random[used:used + n]
        pack, crc32, high, low, node = _ID_HEAD.pack, zlib.crc32, ms >> 32, ms & 0xFFFFFFFF, self._node
        name = queue.encode()
        out = []
        for random in randoms:
            counter = (counter + 1) & 0xFFFFFFFF
            head = pack(high, low, node, counter, random)
            out.append((head + (crc32(head + name) & 0xFFFF).to_bytes(2, "big")).hex())  # id_checksum
        return out

    def next_after(self, queue: str, ms: int, last: str | None) -> str:
        """An id for ``queue`` strictly greater than ``last`` (FIFO order under the queue lock)."""
        candidate = self.new_id(queue, ms)
        if last is None or candidate > last:
            return candidate
        raw = bytearray(bytes.fromhex(last)[:18])
        value = int.from_bytes(raw, "big") + (1 << 32)  # bump the counter field past ``last``
        head = value.to_bytes(18, "big")[:14] + os.urandom(4)
        return (head + id_checksum(head, queue).to_bytes(2, "big")).hex()


def rebind_id(message_id: str, queue: str) -> str:
    """The same id for another queue: its head (time, node, counter, random) with ``queue``'s
    checksum. A dead-lettered message keeps it, so every door can show it the same identity there."""
    head = bytes.fromhex(message_id[:36])
    return (head + id_checksum(head, queue).to_bytes(2, "big")).hex()


#: where an id (and a message file's name, which starts with it) holds its time: 12 hex digits of
#: ms. A send's loop reads a message's second as ``int(mid[ID_TIME_HEX], 16) // 1000`` (what
#: :func:`id_second` does) without the call, which costs a store send 1.5-2 % of its instructions
ID_TIME_HEX = slice(0, 12)


def id_time_ms(message_id: str) -> int:
    return int(message_id[ID_TIME_HEX], 16)


def id_second(message_id: str) -> int:
    """The second an id was made in: the second of its standard bucket (``std_bucket``)."""
    return int(message_id[ID_TIME_HEX], 16) // 1000


def id_shard(message_id: str) -> str:
    """The claim shard of a standard or dedup queue's message: its id's last random hex digit
    (also read from a message file's name, which starts with the id)."""
    return message_id[35]


#: how many hex digits a poll lane is read from (cursor.py)
LANE_DIGITS = 3


def name_bucket(name: str) -> str:
    """The standard bucket of the message whose file is ``name`` (a name of any state, which starts
    with the id): the second its id was made in, where it was sent and where a release returns it;
    ``""`` when the name does not start with an id's time (a stray file)."""
    try:
        return f"{int(name[ID_TIME_HEX], 16) // 1000:011d}"  # std_bucket(id_time_ms(name))
    except ValueError:
        return ""


def delayed_bucket(name: str) -> str:
    """The ready bucket a delayed file's message goes to when due: the last field of its name
    (``<id>~<rc>~<frt>~<due>~<bucket>``), read without parsing the rest."""
    return name[name.rfind("~") + 1:]


def lane_digits(name: str) -> str:
    """The digits a message's poll lane is read from (cursor.py): the last :data:`LANE_DIGITS` hex
    digits of its id's random word, from the id or from a message file's name."""
    return name[33:36]


def sequence_number(message_id: str) -> str:
    """A 128-bit decimal SQS-style sequence number, increasing with the id."""
    return str(int(message_id[:32], 16))


# ---------------------------------------------------------------- names


@quick_init
@dataclass(frozen=True)
class Ref:
    """A parsed message reference: a bare id, or a receipt naming one delivery."""

    id: str
    shard: str | None = None
    claimed_name: str | None = None

    @property
    def receive_count(self) -> int | None:
        if self.claimed_name is None:
            return None
        return int(self.claimed_name.split("~")[1])


def parse_ref(ref: object, queue: str) -> Ref:
    if isinstance(ref, str):
        m = RECEIPT_RE.fullmatch(ref)
        if m:
            name = m.group(2)
            mid = check_message_id(name_id(name), queue)
            return Ref(id=mid, shard=m.group(1), claimed_name=name)
    return Ref(id=check_message_id(ref, queue))


def ready_name(message_id: str, rc: int, frt: int) -> str:
    return f"{message_id}~{rc}~{frt:x}"


#: what follows a message's id in the name it is sent under (received 0 times, never received):
#: ``message_id + NEW_READY_SUFFIX`` is ``ready_name(message_id, 0, 0)`` (a send's loop adds it
#: itself: a call, even of a bound ``str.format``, costs a store send 1.5 % of its instructions)
NEW_READY_SUFFIX = "~0~0"


def new_ready_name(message_id: str) -> str:
    """``ready_name(message_id, 0, 0)``: the name a message is sent under (never received)."""
    return message_id + NEW_READY_SUFFIX


def name_id(name: str) -> str:
    """The message id a message file's name starts with (a name of any state: ``<id>~...``)."""
    return name[:40]


def file_id(path: str) -> str:
    """The message id of the message file at ``path``."""
    return os.path.basename(path)[:40]


def never_received(name: str) -> bool:
    """Whether a message file's name shows a receive count of 0, read without parsing the name."""
    return name[41:43] == "0~"


def received_at_most_once(name: str) -> bool:
    """Whether a message file's name shows a receive count of 0 or 1, read without parsing the name."""
    return name[41:43] in ("0~", "1~")


def claimed_name(message_id: str, rc: int, frt: int, exp: int, tok: str) -> str:
    return f"{message_id}~{rc}~{frt:x}~{exp:x}~{tok}"


def delayed_name(message_id: str, rc: int, frt: int, due: int, bucket: str) -> str:
    return f"{message_id}~{rc}~{frt:x}~{due:x}~{bucket}"


@quick_init
@dataclass(frozen=True)
class MessageName:
    """What every message file's name starts with: ``<id>~<rc>~<frt>``."""

    id: str
    rc: int  # receive count
    frt: int  # first receive, ms since the epoch; 0 = never received


@quick_init
@dataclass(frozen=True)
class ReadyName(MessageName):
    """``ready/<bucket>/<id>~<rc>~<frt>``: visible."""


@quick_init
@dataclass(frozen=True)
class ClaimedName(MessageName):
    """``claimed/<shard>/<id>~<rc>~<frt>~<expires>~<token>``: claimed until ``expires``."""

    expires: int  # ms since the epoch
    token: str  # unique to the claimant


@quick_init
@dataclass(frozen=True)
class DelayedName(MessageName):
    """``delayed/<due-s>/<id>~<rc>~<frt>~<due>~<bucket>``: ready at ``due``, in ``bucket``."""

    due: int  # ms since the epoch
    bucket: str  # the ready bucket it goes to when due


def parse_ready(name: str) -> ReadyName | None:
    m = READY_RE.match(name)
    return ReadyName(m.group(1), int(m.group(2)), int(m.group(3), 16)) if m else None


def parse_claimed(name: str) -> ClaimedName | None:
    m = CLAIMED_RE.match(name)
    if not m:
        return None
    return ClaimedName(m.group(1), int(m.group(2)), int(m.group(3), 16), int(m.group(4), 16), m.group(5))


def parse_delayed(name: str) -> DelayedName | None:
    m = DELAYED_RE.match(name)
    if not m:
        return None
    return DelayedName(m.group(1), int(m.group(2)), int(m.group(3), 16), int(m.group(4), 16), m.group(5))


class _Tokens:
    """Random 64-bit tokens as 16 hex digits (claims, staging and trash names): drawn from the OS
    :data:`AT_ONCE` at a time, one ``getrandom(2)`` per that many tokens. A forked child starts
    afresh (``os.register_at_fork``), so parent and child never hand out the same token.

    Threads share a batch without a lock: a batch is its digits and a counter in one tuple, read
    in one step, and ``next`` of an ``itertools.count`` is atomic, so a counter never hands out one
    place twice and only ever indexes its own digits."""

    AT_ONCE = 256

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Draw a new batch at the next token (in a forked child: the parent's batch is the parent's)."""
        self._batch = ("", itertools.count())

    def next(self) -> str:
        while True:
            digits, places = self._batch
            at = next(places) * 16
            if at < len(digits):
                return digits[at:at + 16]
            self._batch = (os.urandom(8 * self.AT_ONCE).hex(), itertools.count())


_tokens = _Tokens()
os.register_at_fork(after_in_child=_tokens.forget)
#: a token no other call, process or node makes (64 random bits): ``() -> str``
new_token = _tokens.next
