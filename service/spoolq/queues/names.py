"""How each front door names its queues in the one store, and whose permissions apply to them.

Every door keeps its queues in the store under a name that says which door they belong to:

=============================  ==========================================  ===================
door                           store name of the door's queue ``q``         ``q`` may be
=============================  ==========================================  ===================
EmoDB ``/queue/1``             ``q``                                        :func:`is_emodb_name`
EmoDB ``/dedupq/1``            ``__dedupq:q``                               :func:`is_emodb_name`
MQ ``/mq``                     ``mq:q``                                     :data:`MQ_NAME`
SQS, account A, region R       ``sqs:A:R:q``                                :data:`SQS_NAME`
Disque                         ``disque:q``                                 any store name
=============================  ==========================================  ===================

:func:`door_and_name` maps a store name back to its door and the name that door's users know;
:func:`permission_name` is the name the API-key permissions (``queue|<action>|<name>``,
:mod:`spoolq.access.auth`) are checked against: that same name, as the EmoDB and MQ doors check it,
except SQS queues, whose permissions name the store queue (one permission model for every door:
``queue|poll|jobs`` covers the EmoDB, MQ and Disque queues called ``jobs``). Every door, the
console and the metrics read names through here; none reads another door's module for them.

**Kinds, as users see them.** One word per door's kind of queue, the same in ``spoolq create --kind``,
``spoolq queues``, the console, the settings and the config file (:data:`KINDS`, :func:`user_kind`):
``emodb``, ``dedup``, ``sqs``, ``sqs-fifo``, ``mq``, ``disque``. The store's own kinds (standard,
dedup, fifo) are not shown to users.

**Names as users type them** (:func:`resolve`): a queue is named the way its door names it (EmoDB
``orders``, SQS ``orders.fifo`` in the default account and region or by its queue URL, Disque
``builds``, MQ ``jobs``), or by its store name, which always wins when a queue has it (an EmoDB
queue's store name is its plain name). Otherwise every door's queue of that name matches; more than
one match is ambiguous, and the caller names the matches' store names (:func:`ambiguity`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: store-name prefixes of the doors' queues (EmoDB ``/queue/1`` queues have none)
DEDUPQ_PREFIX = "__dedupq:"
MQ_PREFIX = "mq:"
DISQUE_PREFIX = "disque:"
SQS_PREFIX = "sqs:"
_PREFIXES = ((DEDUPQ_PREFIX, "dedupq"), (MQ_PREFIX, "mq"), (DISQUE_PREFIX, "disque"))

#: EmoDB ``Names.isLegalQueueName``: 1-255 of ``a-z0-9-.:@_``, no single leading ``_``, not ``.``/``..``
EMODB_NAME = re.compile(r"[a-z0-9\-.:@_]{1,255}")
#: an MQ queue name
MQ_NAME = re.compile(r"[A-Za-z0-9:@._-]{1,255}")
#: an SQS queue name (a FIFO queue's ends in ``.fifo``)
SQS_NAME = re.compile(r"^(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$")
_SQS_STORE_NAME = re.compile(r"^sqs:(\d{12}):([a-z0-9-]+):([A-Za-z0-9_.-]{1,80})$")


#: each door's name rule, as a refusal says it
NAME_RULES = {
    "queue": "EmoDB queue names are 1-255 characters of a-z 0-9 - . : @ _ (lowercase; not . or ..)",
    "dedupq": "EmoDB queue names are 1-255 characters of a-z 0-9 - . : @ _ (lowercase; not . or ..)",
    "sqs": "SQS queue names are 1-80 characters of A-Z a-z 0-9 - _ ; a FIFO queue's name ends in .fifo",
    "mq": "MQ queue names are 1-255 characters of A-Z a-z 0-9 : @ . _ - (not . or ..)",
    "disque": "Disque queue names are 1-393 characters of A-Z a-z 0-9 . _ : @ -",
}
#: a store queue name (:data:`spoolq.store.layout.QUEUE_NAME_RE`)
_STORE_NAME = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,400}$")


def door_store_name(door: str, name: str, *, account: str = "", region: str = "") -> str | None:
    """The store name of the queue ``door`` knows as ``name`` (an SQS queue: in ``account`` and
    ``region``), or ``None`` when ``name`` breaks the door's rule (:data:`NAME_RULES`)."""
    if door in ("queue", "dedupq"):
        if not is_emodb_name(name) or name.startswith(DEDUPQ_PREFIX):
            return None
        return DEDUPQ_PREFIX + name if door == "dedupq" else name
    if door == "sqs":
        return sqs_store_name(account, region, name) if SQS_NAME.match(name) else None
    if door == "mq":
        return MQ_PREFIX + name if MQ_NAME.fullmatch(name) and name not in (".", "..") else None
    if door == "disque":
        return DISQUE_PREFIX + name if name and _STORE_NAME.fullmatch(DISQUE_PREFIX + name) else None
    raise ValueError(f"unknown door {door!r}")


def is_emodb_name(name: str) -> bool:
    """Whether ``name`` is a legal EmoDB queue name."""
    if not EMODB_NAME.fullmatch(name) or name in (".", ".."):
        return False
    return not (name.startswith("_") and not name.startswith("__"))


def sqs_store_name(account: str, region: str, name: str) -> str:
    return f"{SQS_PREFIX}{account}:{region}:{name}"


def split_sqs_store_name(store_name: str) -> tuple[str, str, str] | None:
    """``(account, region, queue name)`` of an SQS store name, or ``None`` for other doors' queues."""
    match = _SQS_STORE_NAME.match(store_name)
    return (match.group(1), match.group(2), match.group(3)) if match else None


def door_and_name(store_name: str) -> tuple[str, str]:
    """(door, the name users of that door know) of a store queue name."""
    for prefix, door in _PREFIXES:
        if store_name.startswith(prefix):
            return door, store_name[len(prefix):]
    if store_name.startswith(SQS_PREFIX):
        parts = store_name.split(":", 3)
        if len(parts) == 4:
            return "sqs", parts[3]
    return "queue", store_name


def permission_name(store_name: str) -> str:
    """The queue name permissions are matched against (see the module docstring)."""
    door, name = door_and_name(store_name)
    return store_name if door == "sqs" else name


def manage_action(store_name: str) -> str:
    """The permission that purge, unclaim all and moves need: ``poll`` as EmoDB's purge asks,
    ``admin`` on an SQS queue as the SQS door asks for PurgeQueue and move tasks."""
    return "admin" if door_and_name(store_name)[0] == "sqs" else "poll"


#: the kinds of queue users name (``spoolq create --kind``), and the door and FIFO-ness of each
KINDS: dict[str, tuple[str, bool]] = {"emodb": ("queue", False), "dedup": ("dedupq", False), "sqs": ("sqs", False),
                                      "sqs-fifo": ("sqs", True), "mq": ("mq", False), "disque": ("disque", False)}
_DOOR_KIND = {"queue": "emodb", "dedupq": "dedup", "mq": "mq", "disque": "disque"}


def user_kind(store_name: str, store_kind: str) -> str:
    """The kind users know (:data:`KINDS`) of the store queue ``store_name`` of store kind
    ``store_kind`` (``standard``, ``dedup``, ``fifo``)."""
    door = door_and_name(store_name)[0]
    if door == "sqs":
        return "sqs-fifo" if store_kind == "fifo" else "sqs"
    if store_kind == "dedup":
        return "dedup"
    return _DOOR_KIND[door]


#: an SQS queue URL: ``http(s)://host[:port]/[region/]account/name``, as the SQS door hands them out
_QUEUE_URL = re.compile(r"^https?://[^/\s]+/(?:([a-z]{2}(?:-[a-z0-9]+){1,3})/)?(\d{12})/([A-Za-z0-9_.-]{1,80})/?$")


def typed_candidates(typed: str, *, account: str, region: str) -> list[str]:
    """The store names a queue name as a user types it may stand for: the store name itself, then
    each door's queue of that name (SQS: in ``account`` and ``region``); a queue URL stands for its
    SQS queue alone."""
    url = _QUEUE_URL.match(typed)
    if url is not None:
        return [sqs_store_name(url.group(2), url.group(1) or region, url.group(3))]
    out = [typed] if _STORE_NAME.fullmatch(typed) else []
    for door in ("dedupq", "sqs", "mq", "disque"):
        name = door_store_name(door, typed, account=account, region=region)
        if name is not None and name not in out:
            out.append(name)
    return out


def resolve(typed: str, exists: Callable[[str], bool], *, account: str, region: str) -> list[str]:
    """The store names of the existing queues ``typed`` names (``exists`` says whether a store name
    is a queue): its own store name alone when that is a queue, else every door's queue of that
    name (none: no queue has it; more than one: ambiguous, see :func:`ambiguity`)."""
    candidates = typed_candidates(typed, account=account, region=region)
    if candidates and candidates[0] == typed and exists(typed):
        return [typed]
    return [c for c in candidates if exists(c)]


def ambiguity(typed: str, matches: list[str]) -> str:
    """The one-line refusal of a name that more than one queue answers to."""
    return (f"{typed!r} names {len(matches)} queues: {', '.join(matches)}; name the one you mean by its "
            "full name")
