"""The job commands: ADDJOB, GETJOB's fetch, ACKJOB/FASTACK/DELJOB, NACK, ENQUEUE, DEQUEUE, WORKING.

Each is a thin translation onto one or two store calls and runs in the server's thread pool
(store calls block on the file system). How Disque's job controls map onto the store:

* ``ADDJOB`` is ``send`` to ``disque:<queue>`` (created on first use); it replies once the
  message is on stable storage (the store's group commit). ``DELAY`` is the send's delay,
  ``TTL`` its ttl (Disque's default: one day), a job without ``RETRY`` takes its queue's
  visibility timeout (a new Disque queue's is 300 s, Disque's longest default; at most a tenth of
  the TTL, as Disque's default), ``RETRY 0`` an at-most-once message (the store
  deletes it as it hands it out), ``MAXLEN`` is checked against the queued (ready) count.
  ``REPLICATE`` is accepted and delegated to the file system: a message is one file, and a
  replicated or shared file system is what keeps copies. The job's retry, TTL, delay and
  replication are kept in the message's attributes (``{"dq": {"r", "t", "d", "n"}}``).
* ``GETJOB`` polls the queues left to right with a claim as long as the job's ``RETRY``: an
  unacknowledged job comes back when its claim expires (Disque's re-queue after RETRY).
* Jobs are addressed by id alone; the store id checksum names the queue (see
  :meth:`JobCommands.locate`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from spoolq import job_ids as ids
from spoolq.auth import Principal
from spoolq.disque import args as A
from spoolq.disque.protocol import Error, Status
from spoolq.errors import InvalidMessageId, QueueNotFound, SpoolqError
from spoolq.queue_settings import DISQUE_DEFAULT_VISIBILITY_TIMEOUT, door_defaults
from spoolq.store.contract import QueueStore
from spoolq.store.model import (
    Delivery,
    JobView,
    Message,
    OutgoingMessage,
    QueueInfo,
    QueueKind,
    SendResult,
    check_message_id,
)

PAUSE_KEY = "disque.pause"


@dataclass
class QueueStats:
    """Per-process counters of one queue, like a Disque node's (reset on restart)."""

    jobs_in: int = 0
    jobs_out: int = 0
    atime: float = field(default_factory=time.time)


def job_meta(msg: Message) -> dict[str, Any]:
    dq = msg.attributes.get("dq") if isinstance(msg.attributes, dict) else None
    return dq if isinstance(dq, dict) else {}


def disque_id(msg: Message) -> str:
    dq = job_meta(msg)
    return ids.to_disque(msg.id, float(dq.get("t", A.DEFAULT_TTL)), dq.get("r") == 0)


class JobCommands:
    def __init__(self, store: QueueStore, node_prefix: str) -> None:
        self.store = store
        self.node_prefix = node_prefix
        self._known: set[str] = set()  # store names of disque queues seen
        self._stats: dict[str, QueueStats] = {}
        #: guards ``_known`` and ``_stats`` (the commands run in the server's thread pool)
        self._lock = threading.Lock()
        self._retry_hint: dict[str, int] = {}

    # ------------------------------------------------------------------ helpers

    def stat(self, queue: str) -> QueueStats:
        """A copy of ``queue``'s counters (counted from now on when it has none yet)."""
        with self._lock:
            s = self._stats.get(queue)
            if s is None:
                s = self._stats[queue] = QueueStats()
            return replace(s)

    def totals(self) -> tuple[int, int]:
        """Jobs in and jobs out of every queue, since this process started."""
        with self._lock:
            return (sum(s.jobs_in for s in self._stats.values()), sum(s.jobs_out for s in self._stats.values()))

    def _counted(self, queue: str, *, jobs_in: int = 0, jobs_out: int = 0) -> None:
        """``queue`` was used: note it, count its jobs in or out and its access time."""
        now = time.time()
        with self._lock:
            self._known.add(queue)
            s = self._stats.get(queue)
            if s is None:
                s = self._stats[queue] = QueueStats()
            s.jobs_in += jobs_in
            s.jobs_out += jobs_out
            s.atime = now

    def note_queue(self, queue: str) -> None:
        if queue not in self._known:
            with self._lock:
                self._known.add(queue)

    def known_queues(self, refresh: bool = False) -> list[str]:
        if refresh:
            names = self.store.list_queues(A.PREFIX)
            with self._lock:
                self._known = set(names)
        with self._lock:
            return sorted(self._known)

    def pause_state(self, queue: str) -> str:
        try:
            info = self.store.get_queue(queue)
        except QueueNotFound:
            return "none"
        return info.config.extra.get(PAUSE_KEY, "none")

    def locate(self, sids: Sequence[str]) -> list[list[str]]:
        """For each store id, the disque queues whose checksum it matches (usually exactly one)."""
        def matches(sid: str, names: Iterable[str]) -> list[str]:
            out = []
            for name in names:
                try:
                    check_message_id(sid, name)
                except InvalidMessageId:
                    continue
                out.append(name)
            return out

        names = self.known_queues()
        found = [matches(sid, names) for sid in sids]
        if any(not f for f in found):
            names = self.known_queues(refresh=True)
            found = [f or matches(sid, names) for sid, f in zip(sids, found, strict=True)]
        return found

    @staticmethod
    def authorize(who: Principal, action: str, queue: str) -> None:
        name = A.disque_name(queue)
        if not who.can(action, name):
            raise Error(f"this API key may not {action} queue '{name}'", "NOPERM")

    # ------------------------------------------------------------------ ADDJOB

    def addjob(self, who: Principal, argv: Sequence[bytes]) -> Status:
        reply = self.addjobs(who, [argv])[0]
        if isinstance(reply, Error):
            raise reply
        return reply

    def addjobs(self, who: Principal, requests: Sequence[Sequence[bytes]]) -> list[Status | Error]:
        """Pipelined ADDJOBs: each is parsed and authorized on its own (its own error reply), then
        the jobs of each queue are admitted by the queue's state and written with one
        ``send_batch``: one group commit for the whole pipeline."""
        replies: list[Status | Error | None] = [None] * len(requests)
        for queue, batch in self._parse_addjobs(who, requests, replies).items():
            accepted = self._admit(queue, batch, replies)
            if accepted:
                self._answer_added(queue, accepted, self._write(queue, accepted), replies)
        return [r if r is not None else Error("internal error") for r in replies]

    def _parse_addjobs(self, who: Principal, requests: Sequence[Sequence[bytes]],
                       replies: list[Status | Error | None]) -> dict[str, list[tuple[int, A.AddJob]]]:
        """Parse and authorize each request: the jobs by queue, with their places among the
        replies; a request refused gets its error there."""
        jobs: dict[str, list[tuple[int, A.AddJob]]] = {}
        for i, argv in enumerate(requests):
            try:
                job = A.parse_addjob(argv)
                self.authorize(who, "post", job.queue)
            except Error as e:
                replies[i] = e
                continue
            jobs.setdefault(job.queue, []).append((i, job))
        return jobs

    def _admit(self, queue: str, batch: list[tuple[int, A.AddJob]],
               replies: list[Status | Error | None]) -> list[tuple[int, A.AddJob]]:
        """The jobs ``queue`` takes as it is now (its RETRY for the jobs that name none): none while
        it is paused for input, none past a job's MAXLEN; the others get their error reply."""
        try:
            info: QueueInfo | None = self.store.get_queue(queue)
        except QueueNotFound:
            info = None
        visibility = info.config.claim_ttl if info is not None else DISQUE_DEFAULT_VISIBILITY_TIMEOUT
        batch = [(i, job.with_queue_retry(visibility)) for i, job in batch]
        if info is not None and info.config.extra.get(PAUSE_KEY) in ("in", "all"):
            for i, _job in batch:
                replies[i] = Error("Queue paused in input, try later", "PAUSED")
            return []
        accepted: list[tuple[int, A.AddJob]] = []
        ready = None
        for i, job in batch:
            if job.maxlen:
                if ready is None:
                    ready = self.store.counts(queue, limit=job.maxlen).ready if info is not None else 0
                if ready + len(accepted) >= job.maxlen:
                    replies[i] = Error("Queue is already longer than the specified MAXLEN count", "MAXLEN")
                    continue
            accepted.append((i, job))
        return accepted

    def _write(self, queue: str, accepted: list[tuple[int, A.AddJob]]) -> list[SendResult | SpoolqError]:
        """Send the accepted jobs: a result or an error for each, in order."""
        msgs = [OutgoingMessage(body=job.body, delay=float(job.delay) or None, ttl=float(job.ttl),
                                at_most_once=job.retry == 0,
                                attributes={"dq": {"r": job.retry, "t": job.ttl, "d": job.delay,
                                                   "n": job.replicate}})
                for _i, job in accepted]
        try:
            return list(self._send_batch(queue, msgs))
        except SpoolqError as e:  # nothing of the batch was kept: send one by one for one error each
            return [e] if len(msgs) == 1 else [self._send_one(queue, m) for m in msgs]

    def _answer_added(self, queue: str, accepted: list[tuple[int, A.AddJob]],
                      results: list[SendResult | SpoolqError], replies: list[Status | Error | None]) -> None:
        """Each accepted job's reply (its Disque id, or the store's error); the jobs in are counted."""
        added = 0
        for (i, job), result in zip(accepted, results, strict=True):
            if isinstance(result, SpoolqError):
                replies[i] = Error(result.message)
            else:
                added += 1
                replies[i] = Status(ids.to_disque(result.id, job.ttl, job.retry == 0))
        self._counted(queue, jobs_in=added)

    def _send_one(self, queue: str, msg: OutgoingMessage) -> SendResult | SpoolqError:
        try:
            return self._send_batch(queue, [msg])[0]
        except SpoolqError as e:
            return e

    def _send_batch(self, queue: str, msgs: Sequence[OutgoingMessage]) -> list[SendResult]:
        try:
            return self.store.send_batch(queue, msgs)
        except QueueNotFound:  # the first ADDJOB makes the queue (only once its jobs are accepted)
            results = self.store.send_batch(queue, msgs, create=QueueKind.STANDARD)
            self._give_disque_defaults(queue)
            return results

    def _give_disque_defaults(self, queue: str) -> None:
        """A queue the first ADDJOB made gets a Disque queue's defaults (its visibility timeout,
        the RETRY of jobs that name none), unless its settings were changed meanwhile."""
        base = self.store.default_config
        wanted = door_defaults("disque", base)

        def change(info: QueueInfo) -> QueueInfo:
            if info.config.claim_ttl != base.claim_ttl:
                return info
            return replace(info, config=replace(info.config, claim_ttl=wanted.claim_ttl))
        with contextlib.suppress(QueueNotFound):
            self.store.change_queue(queue, change)

    # ------------------------------------------------------------------ GETJOB

    def fetch(self, queues: Sequence[str], count: int, withcounters: bool) -> list[list[Any]]:
        """Claim up to ``count`` jobs from ``queues``, left to right, without waiting."""
        out: list[list[Any]] = []
        for queue in queues:
            if len(out) >= count:
                break
            if self.pause_state(queue) in ("out", "all"):
                continue
            hint = self._retry_hint.get(queue, A.MAX_DEFAULT_RETRY)
            got = self.store.poll(queue, limit=count - len(out), claim_ttl=float(hint))
            if not got:
                continue
            self._counted(queue, jobs_out=len(got))
            self._fix_retries(queue, got, hint)
            out.extend(self.render(queue, d.message, withcounters) for d in got)
        return out

    def _fix_retries(self, queue: str, got: Sequence[Delivery], hint: int) -> None:
        """Give each claim its job's RETRY (the poll used the queue's last-seen one)."""
        for d in got:
            dq = job_meta(d.message)
            retry = dq.get("r")
            if not isinstance(retry, int) or retry == 0 or retry == hint:
                continue
            self._retry_hint[queue] = retry
            self.store.set_claim_ttl(queue, [d.receipt], float(retry))

    def render(self, queue: str, msg: Message, withcounters: bool) -> list[Any]:
        row: list[Any] = [A.disque_name(queue).encode(), disque_id(msg), msg.body]
        if withcounters:
            nacks = self._nacks(queue, msg.id)
            row += ["nacks", nacks, "additional-deliveries", max(0, msg.receive_count - 1 - nacks)]
        return row

    def _nacks(self, queue: str, mid: str) -> int:
        view = self.store.find_job(queue, mid)
        return view.nacks if view is not None else 0

    def release_unsent(self, rows: Sequence[list[Any]]) -> None:
        """A blocked client went away after its jobs were claimed: put them back."""
        for row in rows:
            queue = A.PREFIX + row[0].decode()
            sid = ids.to_store(row[1])
            if sid is not None:
                self.store.release(queue, [sid])

    # ------------------------------------------------------------------ by id

    def _each(self, who: Principal, argv: Sequence[bytes], action: str, op: Any) -> int:
        """Apply ``op(queue, [store ids]) -> [bool]`` to the jobs named in ``argv``, one call per queue;
        an id whose checksum matches several queues is tried in each until one knows it."""
        sids = A.job_ids(argv[1:])
        single: dict[str, list[str]] = {}
        done = 0
        for sid, queues in zip(sids, self.locate(sids), strict=True):
            if len(queues) == 1:
                single.setdefault(queues[0], []).append(sid)
                continue
            for queue in queues:
                self.authorize(who, action, queue)
                if op(queue, [sid])[0]:
                    done += 1
                    break
        for queue, group in single.items():
            self.authorize(who, action, queue)
            done += sum(op(queue, group))
        return done

    def ackjob(self, who: Principal, argv: Sequence[bytes]) -> int:
        return self._each(who, argv, "poll", self.store.ack)

    def nack(self, who: Principal, argv: Sequence[bytes]) -> int:
        return self._each(who, argv, "poll", self.store.nack)

    def enqueue(self, who: Principal, argv: Sequence[bytes]) -> int:
        return self._each(who, argv, "poll", self.store.release)

    def dequeue(self, who: Principal, argv: Sequence[bytes]) -> int:
        def one(queue: str, sid: str) -> bool:
            view = self.store.find_job(queue, sid)
            if view is None or view.state != "ready":
                return False
            retry = job_meta(view.message).get("r") or A.MAX_DEFAULT_RETRY
            return self.store.set_claim_ttl(queue, [sid], float(retry))[0]
        return self._each(who, argv, "poll", lambda queue, group: [one(queue, sid) for sid in group])

    def working(self, who: Principal, argv: Sequence[bytes]) -> int:
        """WORKING: postpone the job's next delivery by its RETRY, which is the reply."""
        sid = A.job_ids(argv[1:2])[0]
        for queue, view in self._found(sid):
            self.authorize(who, "poll", queue)
            retry = self._postpone(queue, sid, view)
            if retry is not None:
                return retry
        raise Error("Job not known in the context of this node.", "NOJOB")

    def _found(self, sid: str) -> Iterator[tuple[str, JobView]]:
        """The queues that know job ``sid``, each with the job as it is there (looked up lazily)."""
        for queue in self.locate([sid])[0]:
            view = self.store.find_job(queue, sid)
            if view is not None:
                yield queue, view

    def _postpone(self, queue: str, sid: str, view: JobView) -> int | None:
        """Claim the job for its RETRY from now (None: it is no longer claimed); ``-TOOLATE`` once
        half its TTL has gone."""
        dq = job_meta(view.message)
        ttl = float(dq.get("t", A.DEFAULT_TTL))
        if time.time() - view.message.sent_at > ttl / 2:
            raise Error("Half of job TTL already elapsed, you are no longer allowed to postpone the "
                        "next delivery.", "TOOLATE")
        retry = int(dq.get("r") or self._retry_hint.get(queue, A.MAX_DEFAULT_RETRY))
        return retry if self.store.set_claim_ttl(queue, [sid], float(retry))[0] else None
