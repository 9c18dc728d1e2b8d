"""The store contract: everything a front door may ask of a store, and what it is promised.

Every front door (EmoDB REST, MQ, SQS, Disque, the web console) calls only what
:class:`QueueStore` declares. :class:`~spoolq.store.filestore.FileStore` implements it on files;
``tests/http/fakes.py`` implements it in memory for fast tests of the doors. Both declare the
protocol as a base class, so ``mypy --strict`` checks every signature of both against this one.

Rules that hold for every method:

* **Validated first.** Every argument is checked before anything changes: a bad queue name,
  message, id, receipt or number raises :class:`~spoolq.errors.InvalidArgument` (or one of its
  subclasses: ``InvalidQueueName``, ``InvalidMessageId``, ``MessageIdChecksumMismatch``, and
  ``MessageRefused`` for a message that breaks one of the store's rules: its ``rule``, a
  :class:`~spoolq.errors.MessageRule`, and its ``limit``) and the store is as it was. The store
  is the one place a message's rules (its size, its group and deduplication ids, what its
  queue's kind needs) are decided; a door translates the refusal into its own wording.
* **Missing queues.** A read of a queue that does not exist answers as an empty queue (``[]``,
  ``0``, ``None``, all ``False``); a write to it raises :class:`~spoolq.errors.QueueNotFound`
  unless the call may create it (``create=``; EmoDB and Disque create queues on first send).
* **Storage trouble.** :class:`~spoolq.errors.StorageUnavailable` (HTTP 503) means the storage
  itself cannot serve now (disk full, I/O error, read-only or missing root); nothing half-stored
  is left visible, and the caller may retry. It is never raised because another thread,
  process or node worked on the same queue at the same moment.
* **Delivery.** At least once: a claimed message that is not acknowledged before its claim
  expires becomes visible again and is delivered again, with its receive count raised. A claim
  is unique to the poller that made it.
* **One lookup.** ``send``, ``send_batch``, ``poll``, ``peek_ready``, ``wait_point`` and the
  calls on claims (``claimed_until``, ``ack``, ``renew``, ``set_claim_ttl``, ``release``,
  ``nack``) take the queue by name, or as the :class:`~spoolq.store.model.QueueInfo` that
  :meth:`QueueStore.get_queue` returned earlier in the same request: a door that looked the queue
  up (to check its kind or config) hands that on and the store does not look again. A queue
  changed or deleted since is looked up anew by its name.
* **One meaning per call.** Each method means one thing for every door; a door's own rule (SQS's
  visibility timeout of 0, EmoDB's poll that claims nothing, the wait after a queue's deletion)
  is the door's translation into these calls, never a flag of the store.
* **References.** A message is named by its id (40 lowercase hex digits, bound to its queue by a
  checksum) or by a receipt (``Delivery.receipt``), which names one delivery of it: a receipt
  acts only on that delivery (or, where said, on its message while nobody received it since).
* **Events.** Sends, polls, acks and flushes are told to subscribed listeners
  (:meth:`QueueStore.subscribe`, :mod:`spoolq.store.events`): metrics count them there, so a
  front door needs no counting code of its own.
* Bodies are opaque bytes, times float seconds since the epoch, and every returned value is
  immutable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from spoolq.errors import MessageRefused, SpoolqError
from spoolq.store.events import StoreListener
from spoolq.store.model import (
    Delivery,
    JobView,
    Message,
    MoveStatus,
    OutgoingMessage,
    QueueConfig,
    QueueCounts,
    QueueInfo,
    QueueKind,
    QueueRef,
    SendResult,
)


class Wakeups(Protocol):
    """Where a waiting poller learns that its queue may have something for it now.

    Each queue has a *key* (:meth:`QueueStore.wait_point`) and a *generation*: a counter of this
    process that moves on with every send, release and claim expiry it sees in that queue (from
    this process, or through inotify from other processes of this node). Changes made through
    other nodes of a shared file system are not seen: a waiter re-polls at least every
    ``rescan`` seconds."""

    @property
    def rescan(self) -> float:
        """Seconds between two re-polls of a waiting queue without a wake-up."""
        ...

    def generation(self, key: str) -> int:
        """The queue's generation now (0 for a key never seen)."""
        ...

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(key)`` on every generation change from now on, from the thread that
        made it (a sender's, or the watcher's own). The listener must return at once."""
        ...


class QueueStore(Protocol):
    """The store contract (see the module docstring for the rules every method follows)."""

    # ------------------------------------------------------------ queues

    @property
    def default_config(self) -> QueueConfig:
        """The config a queue gets when it is created without one (the service's
        ``queue_defaults``); also what a send that creates its queue is validated against."""
        ...

    def create_queue(self, name: str, kind: QueueKind = QueueKind.STANDARD, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None, exist_ok: bool = True) -> QueueInfo:
        """Create queue ``name`` of ``kind`` with ``config`` (else :attr:`default_config`) and
        ``tags``; durable when it returns. If it exists already: with ``exist_ok`` and the same
        kind (and the same config, when one is given) its info is returned unchanged, else
        :class:`~spoolq.errors.QueueAlreadyExists`. Racing creators of one name all succeed
        and one queue results."""
        ...

    def get_queue(self, name: str) -> QueueInfo:
        """The queue's kind, config, tags and times. :class:`~spoolq.errors.QueueNotFound` if
        it does not exist."""
        ...

    def update_queue(self, name: str, config: QueueConfig | None = None,
                     tags: Mapping[str, str] | None = None) -> QueueInfo:
        """Replace the queue's config and/or tags (``None``: keep) in one atomic step; the new
        info. A change of some settings at a time goes through :meth:`change_queue`, which never
        loses a concurrent one. :class:`~spoolq.errors.QueueNotFound` if it does not exist."""
        ...

    def change_queue(self, name: str, change: Callable[[QueueInfo], QueueInfo]) -> QueueInfo:
        """Change some of a queue's settings or tags from what they are at this moment: ``change``
        gets the queue as it is now and returns it as it should be (its name, kind and creation
        time stay, else :class:`~spoolq.errors.InvalidArgument`); the new info. Two changes at the
        same moment, from any process or node, run one after the other and the second sees the
        first, so neither is lost. Whatever ``change`` raises leaves the queue as it was.
        :class:`~spoolq.errors.QueueNotFound` if it does not exist."""
        ...

    def list_queues(self, prefix: str = "") -> list[str]:
        """The names of every queue whose name starts with ``prefix``, sorted. A queue being
        created or deleted at that moment may be left out."""
        ...

    def delete_queue(self, name: str, *, if_empty: bool = False) -> None:
        """Delete the queue and every message in it (its archive segments stay until they
        expire). With ``if_empty``, only if it holds no message, else
        :class:`~spoolq.errors.QueueNotEmpty` and the queue stays as it was; a message sent at the
        same moment is never lost either way it goes. :class:`~spoolq.errors.QueueNotFound` if
        it does not exist."""
        ...

    def deleted_at(self, name: str) -> float | None:
        """When a queue named ``name`` was last deleted, through any process or node sharing the
        store, or ``None`` if no deletion is recorded (a door that refuses a name deleted moments
        ago reads it before it creates the queue)."""
        ...

    def purge(self, queue: str) -> None:
        """Drop every message of the queue (ready, claimed and delayed) and its dedup records;
        the queue and its config stay. A missing queue: nothing to do."""
        ...

    # ------------------------------------------------------------ sending

    def send(self, queue: QueueRef, message: OutgoingMessage, create: QueueKind | None = None) -> SendResult:
        """Store one message; what :meth:`send_batch` does for a batch of one."""
        ...

    def send_batch(self, queue: QueueRef, messages: Sequence[OutgoingMessage],
                   create: QueueKind | None = None) -> list[SendResult]:
        """Store ``messages`` in order; one result each, in the same order. Every message is
        checked against the queue's kind and config before any is stored; when this returns,
        every message is on stable storage (as the store's flush mode defines it) and visible
        to pollers, or delayed by its ``delay``. A missing queue is created as ``create``, else
        :class:`~spoolq.errors.QueueNotFound`. Dedup queues return the pending copy of an
        identical body instead of storing another (``duplicate=True``); FIFO queues need a
        group id (and a dedup id unless content-based deduplication is on), give increasing
        sequence numbers and drop a dedup id seen in the last five minutes. On
        :class:`~spoolq.errors.StorageUnavailable` none of the batch was stored."""
        ...

    def send_each(self, queue: QueueRef, messages: Sequence[OutgoingMessage]) -> list[SendResult | MessageRefused]:
        """:meth:`send_batch` to an existing queue where a message the store refuses fails alone:
        its place in the list holds the :class:`~spoolq.errors.MessageRefused` (its ``rule`` and
        ``limit``: a door words it its own way) and every other message is stored as
        :meth:`send_batch` stores it. A FIFO queue's message without a group id (or without a
        deduplication id, content-based deduplication off) still refuses the whole batch with
        :class:`~spoolq.errors.QueueKindMismatch`, and so does anything that is not a message's
        own fault (not a message, too many, a missing queue, storage trouble)."""
        ...

    def fan_out(self, deliveries: Sequence[tuple[QueueRef, OutgoingMessage]]) -> list[SendResult | SpoolqError]:
        """Store one message in each of several queues (an SNS publish: one copy per subscribed
        queue), with one flush for all of them: when this returns, every message whose place holds
        a :class:`~spoolq.store.model.SendResult` is on stable storage and visible (as
        :meth:`send_batch` stores a message). A delivery that fails alone holds its error instead,
        and nothing of it was stored: :class:`~spoolq.errors.QueueNotFound` (no such queue, or
        deleted meanwhile), :class:`~spoolq.errors.MessageRefused` (the queue's rules: its size
        limit, a FIFO queue's group id). FIFO queues give their sequence numbers and drop a
        deduplication id seen in the last five minutes (``duplicate=True``) as :meth:`send_batch`
        does; every FIFO queue of the call is held from its first write to the flush, so two
        fan-outs reach the FIFO queues they share in one order. Anything else (storage trouble,
        a bad argument) raises: none of the messages was acknowledged, and each may or may not
        have been stored (at least once, never half a message)."""
        ...

    # ------------------------------------------------------------ claims

    def poll(self, queue: QueueRef, limit: int = 10, claim_ttl: float | None = None,
             wait: float = 0.0) -> list[Delivery]:
        """Claim up to ``limit`` visible messages, oldest first (FIFO: the heads of groups with
        nothing in flight, one batch per group; dedup: sorted by body), each for ``claim_ttl``
        seconds (``None``: the queue's default; ``0``: received, its receive count raised, and
        visible again at once). Each delivery has a receipt unique to it. A message received more
        often than its ``max_receives`` (or the queue's dead-letter policy) is moved to the
        dead-letter queue (or dropped without one) instead of delivered. With ``wait`` > 0 and
        nothing visible, waits up to that many seconds for a message. Returns ``[]`` when there
        is nothing (also after a poll's time budget on a busy shared file system)."""
        ...

    def wait_point(self, queue: QueueRef) -> tuple[str, int, float]:
        """Where a poll of ``queue`` that finds nothing would wait, read *before* polling: the
        queue's wake-up key, its generation now and how often a waiter must re-poll without a
        wake-up (see :class:`Wakeups`). A caller that polls after this and finds nothing may
        wait until the key's generation differs or that time passes, and misses nothing."""
        ...

    @property
    def watcher(self) -> Wakeups:
        """The wake-ups of this store's queues (see :meth:`wait_point`)."""
        ...

    def claimed_until(self, queue: QueueRef, refs: Sequence[str]) -> list[float | None]:
        """Whether each message is claimed now, and until when: the end of the live claim a ref
        names (a receipt: its own claim, or a renewal of it; an id: its message's claim), or
        ``None`` where there is none (never claimed, released, run out, acknowledged, gone).
        Changes nothing."""
        ...

    def ack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        """Acknowledge messages: each is removed for good (archive-enabled queues keep a copy in
        their archive). A receipt acknowledges its delivery's message as long as nobody received
        the message since: while its claim holds, after it ran out, and after it was released
        (the most recent receipt deletes). An id acknowledges its message in any state. One
        flag per ref: whether it removed a message."""
        ...

    def renew(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        """Keep each message claimed for at least ``ttl`` seconds from now, never shortening a
        claim (one that already runs longer is left alone, and counts as renewed). A receipt
        renews its own claim (also one that ran out and is not visible yet); an id renews its
        message's claim, or claims a visible message without counting a receive. ``ttl=0``:
        :meth:`release`. One flag per ref: whether the message is claimed now."""
        ...

    def set_claim_ttl(self, queue: QueueRef, refs: Sequence[str], ttl: float) -> list[bool]:
        """Claim each message for exactly ``ttl`` seconds from now (> 0): its claim ends then,
        sooner or later than it would have. A receipt and an id name a message as for
        :meth:`renew`. One flag per ref: whether the message is claimed now."""
        ...

    def release(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        """Make claimed messages visible again now, keeping their receive counts (a receipt: its
        own claim; an id: its message's claim; a claim that ran out is put back too). One flag
        per ref: whether it released a claim."""
        ...

    def nack(self, queue: QueueRef, refs: Sequence[str]) -> list[bool]:
        """:meth:`release`, and each released message's nack count (:attr:`JobView.nacks`) goes
        up by one (a negative acknowledgement: the consumer could not handle it)."""
        ...

    def unclaim_all(self, queue: str) -> None:
        """Release every claim of the queue (EmoDB's unclaimAll). A missing queue: nothing to do."""
        ...

    # ------------------------------------------------------------ reading

    def peek(self, queue: str, limit: int = 10) -> list[Message]:
        """Up to ``limit`` messages oldest first, ready and claimed, without claiming any
        (``Message.claimed_until`` is set on claimed ones). Dedup queues: a peeked message no
        longer absorbs identical sends."""
        ...

    def peek_ready(self, queue: QueueRef, limit: int = 10, wait: float = 0.0) -> list[Message]:
        """Up to ``limit`` visible messages oldest first, without claiming any (what a poll could
        claim now; dedup queues: a peeked message no longer absorbs identical sends). With
        ``wait`` > 0 and nothing visible, waits for a message as :meth:`poll` does."""
        ...

    def counts(self, queue: str, limit: int | None = None) -> QueueCounts:
        """Ready, claimed and delayed messages. With ``limit``, the ready count is the one this
        process keeps from directory times: every bucket is listed while the queue holds fewer
        than ``limit`` messages (``exact``); beyond, only the buckets that changed are, so the
        count is true within seconds of the last change at a cost that does not grow with the
        depth of a backlog (``exact=False`` while some bucket is still estimated)."""
        ...

    def size(self, queue: str, limit: int | None = None) -> int:
        """``counts(queue, limit).total``."""
        ...

    def claim_count(self, queue: str) -> int:
        """Messages claimed now (claims that expired are not counted)."""
        ...

    def oldest_ready_at(self, queue: str) -> float | None:
        """When the oldest ready message was sent, or ``None`` when nothing is ready; reads only
        up to the first non-empty second of the queue."""
        ...

    def find_job(self, queue: str, message_id: str) -> JobView | None:
        """The message ``message_id`` wherever it is (ready, claimed or delayed) with its state,
        or ``None`` if it is gone."""
        ...

    def list_jobs(self, queue: str) -> Iterator[tuple[str, str]]:
        """(id, state) of every message: ready oldest first, then claimed, then delayed. A
        generator: it reads as it goes and may miss messages that change state meanwhile."""
        ...

    # ------------------------------------------------------------ moves

    def move(self, source: str, destination: str, max_per_second: int | None = None, *,
             to_origins: bool = False) -> str:
        """Start moving every message of ``source`` sent before now (claims released, new ids)
        into ``destination`` (created as ``source``'s kind if missing), at most
        ``max_per_second`` a second; returns the move's ref. The move runs in the background,
        survives restarts (any process takes over a move whose owner died) and never loses or
        duplicates a message. ``to_origins``: each message that was dead-lettered into ``source``
        goes back to the queue it was dead-lettered from while that queue exists, the others to
        ``destination``."""
        ...

    def move_status(self, ref: str) -> MoveStatus:
        """The state and progress of a move; :class:`~spoolq.errors.UnknownMove` if there is no
        such move."""
        ...

    def cancel_move(self, ref: str) -> MoveStatus:
        """Stop a move in progress (what it moved stays moved); the status it ended with. A move
        that already ended is returned as it is. :class:`~spoolq.errors.UnknownMove` if there is
        no such move."""
        ...

    def list_moves(self, source: str | None = None) -> list[MoveStatus]:
        """Every move (of ``source``), newest first."""
        ...

    # ------------------------------------------------------------ the store itself

    def subscribe(self, listener: StoreListener) -> Callable[[], None]:
        """Tell ``listener`` of every send, poll, ack and flush from now on (see
        :mod:`spoolq.store.events`: when, in which thread, what is counted); returns the call that
        stops it."""
        ...

    def health(self) -> dict[str, Any]:
        """A probe of the storage: ``{"ok": True, ...details}`` when a file can be written, else
        ``{"ok": False, "error": ...}``. Never raises."""
        ...

    def flush(self) -> bool:
        """Return once everything written before this call is on stable storage: True, or
        :class:`~spoolq.errors.StorageUnavailable` if that failed. False, at once, when the store
        does not flush (``fsync=False``)."""
        ...

    def close(self) -> None:
        """Stop the store's threads and release its files; no call may follow."""
        ...
