"""Queue and introspection commands: QLEN, QPEEK, QSTAT, QSCAN, JSCAN, SHOW, PAUSE.

``PAUSE`` state is kept in the store queue's front-door attributes (``meta.json``,
``extra["disque.pause"]``), so it survives restarts and every Disque process sharing the
root sees it. Only the Disque door honours it: the HTTP doors still send and poll.
Cursors of QSCAN and JSCAN are offsets into the sorted queue list (JSCAN: into the queue's
jobs, ready oldest first, then claimed, then delayed): complete, possibly with repeats when
jobs come and go between calls, as Disque promises.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from spoolq.access.auth import Principal
from spoolq.disque import args as A
from spoolq.disque.jobs import PAUSE_KEY, JobCommands, disque_id, job_meta
from spoolq.disque.protocol import NULL_ARRAY, Error, Status
from spoolq.errors import QueueNotFound
from spoolq.store.model import CLAIMED, DELAYED, READY, JobView, QueueInfo, QueueKind

#: store states -> Disque job states
STATE = {READY: "queued", CLAIMED: "active", DELAYED: "active"}


class QueueCommands:
    def __init__(self, jobs: JobCommands, node_name: str, blocked: Any) -> None:
        self.jobs = jobs
        self.store = jobs.store
        self.node_name = node_name
        self.blocked = blocked  # callable: store queue -> clients blocked on it in this process

    def qlen(self, who: Principal, argv: Sequence[bytes]) -> int:
        queue = A.store_queue(argv[1])
        self.jobs.authorize(who, "get_status", queue)
        return self.store.counts(queue).ready

    def qpeek(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        queue = A.store_queue(argv[1])
        count = A.integer(argv[2])
        self.jobs.authorize(who, "get_status", queue)
        if count == 0:
            return []
        if count > 0:
            n = min(count, 5000)
            msgs = [m for m in self.store.peek(queue, min(5000, n + self.store.claim_count(queue)))
                    if m.claimed_until is None][:n]
            return [self.jobs.render(queue, m, False) for m in msgs]
        ready = [mid for mid, state in self.store.list_jobs(queue) if state == READY]
        out = []
        for mid in reversed(ready[-min(-count, 5000):]):
            view = self.store.find_job(queue, mid)
            if view is not None:
                out.append(self.jobs.render(queue, view.message, False))
        return out

    def qstat(self, who: Principal, argv: Sequence[bytes]) -> Any:
        queue = A.store_queue(argv[1])
        self.jobs.authorize(who, "get_status", queue)
        try:
            info = self.store.get_queue(queue)
        except QueueNotFound:
            return NULL_ARRAY
        now = time.time()
        stats = self.jobs.stat(queue)
        return ["name", A.disque_name(queue), "len", self.store.counts(queue).ready,
                "age", max(0, int(now - info.created_at)), "idle", max(0, int(now - stats.atime)),
                "blocked", self.blocked(queue), "import-from", [], "import-rate", 0,
                "jobs-in", stats.jobs_in, "jobs-out", stats.jobs_out,
                "pause", info.config.extra.get(PAUSE_KEY, "none")]

    def pause(self, who: Principal, argv: Sequence[bytes]) -> Status:
        queue = A.store_queue(argv[1])
        flags: set[str] | None = None
        for a in argv[2:]:
            opt = A.text(a).lower()
            if opt == "none":
                flags = set()
            elif opt in ("in", "out"):
                flags = (flags or set()) | {opt}
            elif opt == "all":
                flags = (flags or set()) | {"in", "out"}
            elif opt not in ("state", "bcast"):
                raise A.SYNTAX
        if flags is None:
            self.jobs.authorize(who, "get_status", queue)
            return Status(self.jobs.pause_state(queue))
        self.jobs.authorize(who, "post", queue)
        self.jobs.authorize(who, "poll", queue)
        state = "all" if flags == {"in", "out"} else (flags.pop() if flags else "none")
        try:
            info = self.store.get_queue(queue)
        except QueueNotFound:
            if state == "none":
                return Status("none")
            info = self.store.create_queue(queue, QueueKind.STANDARD)

        def pause(now: QueueInfo) -> QueueInfo:  # the other settings as they are at that moment
            extra = {k: v for k, v in now.config.extra.items() if k != PAUSE_KEY}
            if state != "none":
                extra[PAUSE_KEY] = state
            return replace(now, config=replace(now.config, extra=extra))
        if info.config.extra.get(PAUSE_KEY, "none") != state:
            self.store.change_queue(queue, pause)
        self.jobs.note_queue(queue)
        return Status(state)

    # ------------------------------------------------------------------ SHOW, JSCAN

    def show_view(self, queue: str, view: JobView) -> list[Any]:
        msg = view.message
        dq = job_meta(msg)
        now = time.time()
        ttl = float(dq.get("t", A.DEFAULT_TTL))
        requeue = int((view.until - now) * 1000) if view.state == CLAIMED and view.until else None
        awake = int((view.until - now) * 1000) if view.state == DELAYED and view.until else None
        return ["id", disque_id(msg), "queue", A.disque_name(queue), "state", STATE[view.state],
                "repl", int(dq.get("n", 1)), "ttl", max(0, int(msg.sent_at + ttl - now)),
                "ctime", int(msg.sent_at * 1e9), "delay", int(dq.get("d", 0)),
                "retry", int(dq.get("r", A.MAX_DEFAULT_RETRY)), "nacks", view.nacks,
                "additional-deliveries", max(0, msg.receive_count - 1 - view.nacks),
                "nodes-delivered", [self.node_name], "nodes-confirmed", [],
                "next-requeue-within", requeue, "next-awake-within", awake, "body", msg.body]

    def show(self, who: Principal, argv: Sequence[bytes]) -> Any:
        sid = A.job_ids(argv[1:2])[0]
        for queue in self.jobs.locate([sid])[0]:
            view = self.store.find_job(queue, sid)
            if view is not None:
                self.jobs.authorize(who, "get_status", queue)
                return self.show_view(queue, view)
        return None

    @staticmethod
    def _scan_args(argv: Sequence[bytes], options: dict[str, bool]) -> tuple[int, dict[str, list[bytes]]]:
        """(cursor, {option: [values]}): options taking a value map to True in ``options``."""
        cursor: int | None = None
        found: dict[str, list[bytes]] = {}
        j = 1
        while j < len(argv):
            opt = A.text(argv[j]).lower()
            remaining = len(argv) - j - 1
            if opt in options and (not options[opt] or remaining):
                if options[opt]:
                    found.setdefault(opt, []).append(argv[j + 1])
                    j += 1
                else:
                    found.setdefault(opt, [])
            else:
                if cursor is not None:
                    raise A.SYNTAX
                try:
                    cursor = A.integer(argv[j], "invalid cursor")
                except Error:
                    raise Error("invalid cursor") from None
                if cursor < 0:
                    raise Error("invalid cursor")
            j += 1
        return cursor or 0, found

    def qscan(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        cursor, opts = self._scan_args(argv, {"count": True, "busyloop": False, "minlen": True,
                                              "maxlen": True, "importrate": True})
        count = A.integer(opts["count"][-1]) if "count" in opts else 100
        minlen = A.integer(opts["minlen"][-1]) if "minlen" in opts else None
        maxlen = A.integer(opts["maxlen"][-1]) if "maxlen" in opts else None
        rate = A.integer(opts["importrate"][-1]) if "importrate" in opts else 0
        names = self.jobs.known_queues(refresh=cursor == 0)
        if "busyloop" in opts:
            count = len(names) + 1
        page, end = names[cursor:cursor + max(1, count)], cursor + max(1, count)
        out = []
        for queue in page:
            if not who.can("get_status", A.disque_name(queue)) or rate > 0:
                continue
            if minlen is not None or maxlen is not None:
                n = self.store.counts(queue).ready
                if (minlen is not None and n < minlen) or (maxlen is not None and n > maxlen):
                    continue
            out.append(A.disque_name(queue))
        return [str(end if end < len(names) else 0), out]

    def jscan(self, who: Principal, argv: Sequence[bytes]) -> list[Any]:
        cursor, opts = self._scan_args(argv, {"count": True, "busyloop": False, "queue": True,
                                              "state": True, "reply": True})
        count = A.integer(opts["count"][-1]) if "count" in opts else 100
        states = set()
        for s in opts.get("state", []):
            name = A.text(s).lower()
            if name not in ("wait-repl", "active", "queued", "acked"):
                raise Error("Invalid job state name")
            states.add(name)
        reply = A.text(opts["reply"][-1]).lower() if "reply" in opts else "id"
        if reply not in ("id", "all"):
            raise Error("Invalid REPLY type, try ID or ALL")
        queues = ([A.store_queue(opts["queue"][-1])] if "queue" in opts
                  else self.jobs.known_queues(refresh=cursor == 0))
        limit = None if "busyloop" in opts else max(1, count)
        out: list[Any] = []
        position = 0
        for queue in queues:
            if not who.can("get_status", A.disque_name(queue)):
                continue
            for mid, state in self.store.list_jobs(queue):
                position += 1
                if position <= cursor:
                    continue
                if limit is not None and position > cursor + limit:
                    return [str(cursor + limit), out]
                if states and STATE[state] not in states:
                    continue
                view = self.store.find_job(queue, mid)
                if view is None:
                    continue
                out.append(self.show_view(queue, view) if reply == "all" else disque_id(view.message))
        return ["0", out]
