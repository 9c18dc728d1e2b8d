"""Argument parsing in Disque's words: each bad argument gets the error Disque gives for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from spoolq.disque.protocol import Error
from spoolq.queues import job_ids as ids
from spoolq.queues import names as queue_names
from spoolq.store.model import is_queue_name

#: Disque queue ``q`` is store queue ``disque:q``
PREFIX = queue_names.DISQUE_PREFIX
SYNTAX = Error("syntax error")
#: Disque's defaults: TTL one day; RETRY a tenth of the TTL, at most 5 minutes, at least 1 second
DEFAULT_TTL = 86_400
MAX_DEFAULT_RETRY = 300
#: the store's longest claim (12 hours) bounds RETRY
MAX_RETRY = 43_200


def text(arg: bytes) -> str:
    return arg.decode("utf-8", "replace")


def integer(arg: bytes, message: str = "value is not an integer or out of range") -> int:
    """A strict decimal integer (Redis's getLongLongFromObject): no spaces, no '+', no '1.0'."""
    s = arg.decode("ascii", "replace")
    body = s[1:] if s.startswith("-") else s
    if not body.isdigit() or len(body) > 18 or (len(body) > 1 and body[0] == "0"):
        raise Error(message)
    return int(s)


def timeout_ms(arg: bytes) -> int:
    value = integer(arg, "timeout is not an integer or out of range")
    if value < 0:
        raise Error("timeout is negative")
    return value


def store_queue(arg: bytes) -> str:
    """The store queue of Disque queue ``arg`` (``disque:<name>``)."""
    name = PREFIX + arg.decode("utf-8", "replace")
    if not is_queue_name(name):
        raise Error(f"invalid queue name '{text(arg)[:80]}': spoolq queue names are 1-{400 - len(PREFIX)} "
                    "characters of A-Z a-z 0-9 . _ : @ -")
    return name


def disque_name(store_name: str) -> str:
    return store_name[len(PREFIX):]


def job_ids(args: Sequence[bytes]) -> list[str]:
    """Store ids of Disque job ids; ``-BADID`` for the first malformed one (Disque checks all first)."""
    out = []
    for a in args:
        sid = ids.to_store(a.decode("ascii", "replace"))
        if sid is None:
            raise Error("Invalid Job ID format.", "BADID")
        out.append(sid)
    return out


@dataclass(frozen=True)
class AddJob:
    queue: str  # store name
    body: bytes
    timeout_ms: int
    replicate: int = 1
    delay: int = 0
    retry: int = -1
    ttl: int = DEFAULT_TTL
    maxlen: int = 0
    asynchronous: bool = False
    #: whether the ADDJOB named its RETRY; one that did not takes its queue's visibility timeout
    #: (up to a tenth of the TTL: :meth:`with_queue_retry`)
    retry_named: bool = True

    def with_queue_retry(self, visibility_timeout: float) -> AddJob:
        """This job with its queue's visibility timeout as RETRY where the ADDJOB named none (at
        most a tenth of its TTL, at least 1 s, as Disque's default)."""
        if self.retry_named:
            return self
        return replace(self, retry=max(1, min(self.ttl // 10, int(visibility_timeout))))


def parse_addjob(args: Sequence[bytes]) -> AddJob:
    opts: dict[str, int] = {"replicate": 1, "delay": 0, "retry": -1, "ttl": DEFAULT_TTL, "maxlen": 0}
    asynchronous = False
    rules: dict[str, tuple[Callable[[int], bool], str]] = {
        "replicate": (lambda v: 1 <= v <= 65535, "REPLICATE must be between 1 and 65535"),
        "ttl": (lambda v: v > 0, "TTL must be a number > 0"),
        "retry": (lambda v: v >= 0, "RETRY time must be a non negative number"),
        "delay": (lambda v: v >= 0, "DELAY time must be a non negative number"),
        "maxlen": (lambda v: v > 0, "MAXLEN must be a positive number"),
    }
    j = 4
    while j < len(args):
        opt = text(args[j]).lower()
        last = j == len(args) - 1
        if opt in rules and not last:
            ok, message = rules[opt]
            try:
                value = integer(args[j + 1])
            except Error:
                raise Error(message) from None
            if not ok(value):
                raise Error(message)
            opts[opt] = value
            j += 2
        elif opt == "async":
            asynchronous = True
            j += 1
        else:
            raise SYNTAX
    timeout = timeout_ms(args[3])
    queue = store_queue(args[1])
    retry, ttl, delay = opts["retry"], opts["ttl"], opts["delay"]
    if opts["replicate"] > 1 and retry == 0:
        raise Error("With RETRY set to 0 please explicitly set  REPLICATE to 1 (at-most-once delivery)")
    if delay >= ttl:
        raise Error("The specified DELAY is greater than TTL. Job refused since would never be delivered")
    retry_named = retry != -1
    if not retry_named:
        retry = max(1, min(ttl // 10, MAX_DEFAULT_RETRY))
    if retry > MAX_RETRY:
        raise Error(f"RETRY must be at most {MAX_RETRY} seconds (the longest claim spoolq keeps)")
    if ttl > 10 * 365 * 86_400:
        raise Error("TTL must be at most 315360000 seconds")
    if delay > 365 * 86_400:
        raise Error("DELAY must be at most 31536000 seconds")
    return AddJob(queue, bytes(args[2]), timeout, opts["replicate"], delay, retry, ttl, opts["maxlen"],
                  asynchronous, retry_named)


@dataclass(frozen=True)
class GetJob:
    queues: tuple[str, ...]  # store names, left to right
    timeout_ms: int = 0  # 0 = block forever
    count: int = 1
    nohang: bool = False
    withcounters: bool = False


def parse_getjob(args: Sequence[bytes]) -> GetJob:
    timeout, count, nohang, withcounters = 0, 1, False, False
    queues: list[bytes] | None = None
    j = 1
    while j < len(args):
        opt = text(args[j]).lower()
        last = j == len(args) - 1
        if opt == "nohang":
            nohang = True
        elif opt == "withcounters":
            withcounters = True
        elif opt == "timeout" and not last:
            timeout = timeout_ms(args[j + 1])
            j += 1
        elif opt == "count" and not last:
            try:
                count = integer(args[j + 1])
            except Error:
                count = 0
            if count <= 0:
                raise Error("COUNT must be a number greater than zero")
            j += 1
        elif opt == "from":
            queues = list(args[j + 1:])
            break
        else:
            raise SYNTAX
        j += 1
    if not queues:
        raise SYNTAX
    names = tuple(dict.fromkeys(store_queue(q) for q in queues))
    return GetJob(names, timeout, min(count, 1000), nohang, withcounters)
