"""Queues declared in the config file: made at start if missing, brought to their declared settings.

The config file's ``queues:`` section lists queues as the doors know them::

    queues:
      - name: orders-dlq.fifo
        door: sqs                 # the kind: emodb (or queue), dedup (or dedupq), sqs, sqs-fifo, mq, disque
        account: "123456789012"   # SQS only; default: the service's SQS account
        region: eu-west-1         # SQS only; default: the service's SQS region
        retention: 14d
      - name: orders.fifo         # an SQS queue whose name ends in .fifo is a FIFO queue
        door: sqs
        region: eu-west-1
        content_based_dedup: true
        visibility_timeout: 45s
        dead_letter: {queue: orders-dlq.fifo, max_receives: 5}
        tags: {team: shop}
      - name: audit
        door: emodb
        archive: true
        archive_retention: 30d

Each entry has a ``name`` and a ``door``, then any of the settings the console and ``spoolq
settings`` edit (:mod:`spoolq.queues.queue_settings`: ``visibility_timeout``, ``delay``, ``retention``,
``receive_wait``, ``max_message_bytes``, ``dead_letter``, ``archive``, ``archive_retention``;
durations take a unit: ``90s``, ``15m``, ``12h``, ``30d``, ``2w``), ``tags`` (strings to strings)
and, for SQS FIFO queues, ``content_based_dedup``. A dead-letter queue is named as its door knows
it and is declared in the same file (for an SQS queue: same account and region).

:func:`parse_declarations` checks every entry and reports each mistake as one line naming the
entry (:mod:`spoolq.config.check`: ``spoolq check-config`` prints them all, ``spoolq serve``
refuses to start on any, and a reload with any changes nothing).
:func:`apply_declarations` goes through the store contract only: a missing queue is created with
its declared settings, an existing one gets the settings its entry names changed
(:meth:`~spoolq.store.contract.QueueStore.change_queue`, so a concurrent change of another setting
is kept); a setting the entry leaves out keeps its value, and no message is ever touched. A queue
that exists with another kind (a standard queue declared FIFO) is left as it is and reported: its
kind cannot change without deleting it. ``spoolq serve`` applies the declarations before it serves
and again on every reload (``SIGHUP``, once the new workers serve), from its master process; what
is not applied is logged at ERROR (:func:`apply_from_settings`) and shown as a failed reload.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from spoolq.errors import InvalidArgument, QueueAlreadyExists, QueueNotFound, SpoolqError
from spoolq.queues.names import NAME_RULES, door_and_name, door_store_name
from spoolq.queues.queue_settings import (
    SETTABLE,
    QueueDefaults,
    SettingRefused,
    changed_config,
    door_defaults,
    parse_duration,
    queue_defaults,
    settings_of,
)
from spoolq.settings.config_file import unknown_keys
from spoolq.settings.server import ConfigRefused, Settings, SettingsError
from spoolq.store.contract import QueueStore
from spoolq.store.model import QueueConfig, QueueInfo, QueueKind

#: the ``door:`` values, and the door each names
DOORS = {"emodb": "queue", "queue": "queue", "dedup": "dedupq", "dedupq": "dedupq", "sqs": "sqs",
         "sqs-fifo": "sqs", "mq": "mq",
         "disque": "disque"}
#: the fields of an entry besides the settings
ENTRY_FIELDS = ("name", "door", "account", "region", "fifo", "content_based_dedup", "tags")
_DURATIONS = ("visibility_timeout", "delay", "retention", "receive_wait", "archive_retention")
MAX_TAGS = 50
_REGION = re.compile(r"[a-z]{2}(-[a-z0-9]+){1,3}")


@dataclass(frozen=True)
class DeclaredQueue:
    """One valid entry of ``queues:``: the store queue it stands for and what it declares."""

    label: str  # how lines name it: ``queues[2] (orders.fifo)``
    store_name: str
    kind: QueueKind
    #: the settings it names, as :func:`~spoolq.queues.queue_settings.changed_config` takes them
    #: (``dead_letter.queue`` already the store name)
    settings: Mapping[str, Any]
    tags: Mapping[str, str] | None = None
    content_based_dedup: bool | None = None
    #: the config a queue made by this entry starts from (before its settings)
    base: QueueConfig = field(default_factory=QueueConfig)


class DeclarationsRefused(ConfigRefused):
    """The ``queues:`` section has mistakes: :attr:`problems` holds one line for each."""


def parse_declarations(config: Mapping[str, Any], settings: Settings) -> list[DeclaredQueue]:
    """The entries of ``config``'s ``queues:`` section, every one checked; :class:`DeclarationsRefused`
    with one line per mistake if any has one."""
    raw = config.get("queues")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DeclarationsRefused(["config: queues must be a list of queues (- name: ..., door: ...)"])
    try:
        defaults = queue_defaults(config)
    except ConfigRefused:  # its own mistakes are told by its own check (spoolq.config.check)
        defaults = QueueDefaults()
    problems: list[tuple[int, str]] = []  # (entry index, line): told in the file's order
    entries: list[tuple[int, str, Mapping[str, Any], str, QueueKind]] = []
    seen: dict[str, str] = {}
    for index, entry in enumerate(raw):
        label = f"queues[{index}]"
        if not isinstance(entry, Mapping):
            problems.append((index, f"config: {label}: each queue is a mapping with a name and a door"))
            continue
        if isinstance(entry.get("name"), str):
            label = f"{label} ({entry['name']})"
        try:
            store_name, kind = _identity(entry, settings)
        except SettingRefused as e:
            problems.append((index, f"config: {label}: {e}"))
            continue
        if store_name in seen:
            problems.append((index, f"config: {label}: the same queue as {seen[store_name]} (declare each "
                                    "queue once)"))
            continue
        seen[store_name] = label
        entries.append((index, label, entry, store_name, kind))
    kinds = {store_name: kind for _index, _label, _entry, store_name, kind in entries}
    declared = []
    for index, label, entry, store_name, kind in entries:
        found = _entry_problems(entry, store_name, kind, kinds, settings, defaults)
        if isinstance(found, list):
            problems.extend((index, f"config: {label}: {problem}") for problem in found)
        else:
            declared.append(replace(found, label=label))
    if problems:
        raise DeclarationsRefused([line for _index, line in sorted(problems, key=lambda p: p[0])])
    return declared


def _identity(entry: Mapping[str, Any], settings: Settings) -> tuple[str, QueueKind]:
    """(store name, kind) of an entry, from its name, door, account, region and fifo."""
    name, door_value = entry.get("name"), entry.get("door")
    if not isinstance(name, str) or not name:
        raise SettingRefused("a queue needs a name")
    if not isinstance(door_value, str) or door_value not in DOORS:
        raise SettingRefused(f"door must be one of {', '.join(sorted(DOORS))}, got {door_value!r:.60}")
    door = DOORS[door_value]
    for sqs_only in ("account", "region", "fifo"):
        if sqs_only in entry and door != "sqs":
            raise SettingRefused(f"{sqs_only} is for SQS queues (door: sqs)")
    account = str(entry.get("account", settings.sqs_account_id))
    region = str(entry.get("region", settings.sqs_region))
    if not (len(account) == 12 and account.isdigit()):
        raise SettingRefused(f"account must be 12 digits, got {account!r:.60}")
    if not _REGION.fullmatch(region):
        raise SettingRefused(f"region must be an AWS region name like eu-west-1, got {region!r:.60}")
    store_name = door_store_name(door, name, account=account, region=region)
    if store_name is None:
        raise SettingRefused(f"{name!r:.120} is not a valid name: {NAME_RULES[door]}")
    fifo = door == "sqs" and name.endswith(".fifo")
    if door_value == "sqs-fifo" and not fifo:
        raise SettingRefused(f"an SQS FIFO queue's name ends in .fifo, got {name!r:.120}")
    if "fifo" in entry and entry["fifo"] is not fifo:
        raise SettingRefused("an SQS queue is FIFO exactly when its name ends in .fifo (fifo: "
                             f"{'true' if fifo else 'false'} or leave it out)")
    if door == "dedupq":
        return store_name, QueueKind.DEDUP
    return store_name, QueueKind.FIFO if fifo else QueueKind.STANDARD


def _entry_problems(entry: Mapping[str, Any], store_name: str, kind: QueueKind, kinds: Mapping[str, QueueKind],
                    settings: Settings, defaults: QueueDefaults) -> DeclaredQueue | list[str]:
    """The entry as a :class:`DeclaredQueue`, or its mistakes (one line each)."""
    problems = unknown_keys(entry, ENTRY_FIELDS + SETTABLE, "")
    changes: dict[str, Any] = {}
    for name in SETTABLE:
        if name not in entry:
            continue
        value = entry[name]
        if name == "dead_letter" and isinstance(value, Mapping):
            unknown = unknown_keys(value, ("queue", "max_receives"), "dead_letter: ")
            if unknown:
                problems += unknown
                continue
        try:
            if name in _DURATIONS and isinstance(value, str):
                value = parse_duration(value, name)
            if name == "dead_letter" and isinstance(value, Mapping) and isinstance(value.get("queue"), str):
                value = {**value, "queue": _dead_letter_store_name(store_name, value["queue"])}
        except InvalidArgument as e:
            problems.append(str(e))
            continue
        changes[name] = value
    base = defaults.apply(door_defaults(door_and_name(store_name)[0], QueueConfig()))
    probe = QueueInfo(store_name, kind, base, {}, 0.0, 0.0)

    def lookup(name: str) -> QueueInfo | None:
        return QueueInfo(name, kinds[name], QueueConfig(), {}, 0.0, 0.0) if name in kinds else None

    for name, value in changes.items():  # one at a time: each mistake gets its line
        try:
            changed_config(probe, {name: value}, lookup)
        except SettingRefused as e:
            text = str(e)
            if name == "dead_letter" and "does not exist" in text:
                text = f"the dead-letter queue {entry[name]['queue']!r:.120} is not declared in this file"
            problems.append(text)
    tags = entry.get("tags")
    if tags is not None and not (isinstance(tags, Mapping) and len(tags) <= MAX_TAGS and all(
            isinstance(k, str) and 1 <= len(k) <= 128 and isinstance(v, str) and len(v) <= 256
            for k, v in tags.items())):
        problems.append(f"tags must map at most {MAX_TAGS} names (1-128 characters) to strings (up to 256 "
                        "characters); quote values that look like numbers")
    dedup = entry.get("content_based_dedup")
    if dedup is not None and (not isinstance(dedup, bool) or kind is not QueueKind.FIFO):
        problems.append("content_based_dedup is true or false, on SQS FIFO queues (names ending in .fifo)")
    if problems:
        return problems
    return DeclaredQueue("", store_name, kind, changes, None if tags is None else dict(tags), dedup, base)


def _dead_letter_store_name(store_name: str, queue: str) -> str:
    """The store name of a dead-letter queue named as the queue's own door names queues."""
    if store_name.startswith("sqs:"):
        account, region = store_name.split(":")[1:3]
        return door_store_name("sqs", queue, account=account, region=region) or queue
    for door, prefix in (("dedupq", "__dedupq:"), ("mq", "mq:"), ("disque", "disque:")):
        if store_name.startswith(prefix):
            return door_store_name(door, queue) or queue
    return queue


def load_declarations(settings: Settings) -> list[DeclaredQueue]:
    """The declared queues of the config file ``settings`` names (none without one)."""
    if settings.config is None:
        return []
    from spoolq.settings.config_file import load_config  # the one reader of the config file

    return parse_declarations(load_config(settings.config), settings)


# --- applying ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """What applying one declaration did: ``created``, ``changed``, ``unchanged`` or ``refused``."""

    queue: str  # the store name
    outcome: str
    reason: str = ""

    def line(self) -> str:
        return f"queue {self.queue}: {self.outcome}" + (f" ({self.reason})" if self.reason else "")


def apply_declarations(store: QueueStore, declared: Iterable[DeclaredQueue]) -> list[Applied]:
    """Make every declared queue that is missing, then bring each to its declared settings (see the
    module docstring); what happened to each, in order. Never raises for one queue's trouble other
    than the storage's own (:class:`~spoolq.errors.StorageUnavailable`)."""
    declared = list(declared)
    created: set[str] = set()
    refused: dict[str, str] = {}
    for queue in declared:  # every queue first: a dead-letter queue must exist before it is named
        try:
            info = store.get_queue(queue.store_name)
        except QueueNotFound:
            base = _with_tags_and_dedup(queue, QueueInfo(queue.store_name, queue.kind, queue.base, {}, 0, 0))
            try:
                store.create_queue(queue.store_name, queue.kind, base.config, base.tags, exist_ok=False)
                created.add(queue.store_name)
            except QueueAlreadyExists:  # made meanwhile by someone else: changed below
                info = store.get_queue(queue.store_name)
            else:
                continue
        if info.kind is not queue.kind:
            refused[queue.store_name] = (f"it exists as a {info.kind.value} queue, declared {queue.kind.value}: "
                                         "a queue's kind cannot change; delete it to have it made anew")
    out = []
    for queue in declared:
        if queue.store_name in refused:
            out.append(Applied(queue.store_name, "refused", refused[queue.store_name]))
            continue
        try:
            changed = _bring_to_declared(store, queue)
        except SettingRefused as e:
            out.append(Applied(queue.store_name, "refused", str(e)))
            continue
        except QueueNotFound:
            out.append(Applied(queue.store_name, "refused", "deleted while its settings were applied"))
            continue
        if queue.store_name in created:
            out.append(Applied(queue.store_name, "created"))
        else:
            out.append(Applied(queue.store_name, "changed" if changed else "unchanged", ", ".join(changed)))
    return out


def _with_tags_and_dedup(queue: DeclaredQueue, info: QueueInfo) -> QueueInfo:
    if queue.tags is not None:
        info = replace(info, tags=dict(queue.tags))
    if queue.content_based_dedup is not None:
        info = replace(info, config=replace(info.config, content_based_dedup=queue.content_based_dedup))
    return info


def _bring_to_declared(store: QueueStore, queue: DeclaredQueue) -> list[str]:
    """Apply ``queue``'s settings, tags and content-based dedup; what changed, as ``name old -> new``
    (empty: nothing)."""
    def lookup(name: str) -> QueueInfo | None:
        try:
            return store.get_queue(name)
        except (QueueNotFound, InvalidArgument):
            return None

    def wanted(info: QueueInfo) -> QueueInfo:
        if queue.settings:
            info = replace(info, config=changed_config(info, queue.settings, lookup))
        return _with_tags_and_dedup(queue, info)

    now = store.get_queue(queue.store_name)
    after = wanted(now)
    if _same(after, now):
        return []
    store.change_queue(queue.store_name, wanted)
    return _differences(now, after)


def _differences(before: QueueInfo, after: QueueInfo) -> list[str]:
    """The settings (and tags, content-based dedup) that differ, with their values (no secret is a setting)."""
    a, b = settings_of(before), settings_of(after)
    out = [f"{name} {json.dumps(a[name])} -> {json.dumps(b[name])}" for name in b if a.get(name) != b[name]]
    if before.config.content_based_dedup != after.config.content_based_dedup:
        out.append(f"content_based_dedup {before.config.content_based_dedup} -> {after.config.content_based_dedup}")
    if dict(before.tags) != dict(after.tags):
        out.append("tags")
    return out


def _same(a: QueueInfo, b: QueueInfo) -> bool:
    return a.config == b.config and dict(a.tags) == dict(b.tags)


def apply_from_settings(settings: Settings, say: Callable[[str], None],
                        complain: Callable[[str], None] | None = None) -> list[str]:
    """Read the config file's declarations and apply them to the store at ``settings.root``, saying
    what happened to each queue (``say``); every line about something not applied goes to
    ``complain`` (default ``say``: the caller logs those at ERROR) and is returned, so the caller
    can report it too (none: all applied). Run by ``spoolq serve``'s master at start and on reload."""
    complain = complain or say
    failures: list[str] = []

    def fail(line: str) -> None:
        failures.append(line)
        complain(line)

    try:
        declared = load_declarations(settings)
    except SettingsError as e:
        for problem in getattr(e, "problems", [str(e)]):
            fail(f"declared queues not applied: {problem}")
        return failures
    if not declared:
        return failures
    from spoolq.queues.serving import open_store

    try:
        store = open_store(settings, background=False)
    except (SpoolqError, OSError) as e:
        fail(f"declared queues not applied: the store at {settings.root} cannot be opened: {e}")
        return failures
    try:
        results = apply_declarations(store, declared)
    except SpoolqError as e:
        fail(f"declared queues not all applied: {e}")
        return failures
    finally:
        store.close()
    for result in results:
        (fail if result.outcome == "refused" else say)(result.line())
    return failures
