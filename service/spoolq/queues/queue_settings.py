"""A queue's settings as people edit them: one JSON shape for the settings API, the CLI and the console.

The settings of a queue (its :class:`~spoolq.store.model.QueueConfig`), whichever door made it::

    {"queue": "sqs:123456789012:us-east-1:Orders",   the store name (read only)
     "kind": "emodb" | "dedup" | "sqs" | "sqs-fifo" | "mq" | "disque",   (read only)
     "visibility_timeout": 30,        seconds a delivery stays claimed when the poll names no time
     "delay": 0,                      seconds before a new message becomes visible, unless it names its own
     "retention": 1209600,            unconsumed messages older than this many seconds are dropped
     "receive_wait": 0,               long-poll wait of a poll that names none (SQS)
     "max_message_bytes": 1048576,    largest message body
     "dead_letter": {"queue": "orders-dlq", "max_receives": 5} | null,
                                      after max_receives deliveries, the next one moves the
                                      message to that queue (a store name) instead
     "archive": false,                keep acknowledged messages for audit (``spoolq pipeline audit``)
     "archive_retention": 2592000}    seconds archived messages are kept

Times are whole seconds. A change names only the settings it changes; every value is checked
before anything is written, and an unknown name, a value out of range, a dead-letter queue that
does not exist (or is the queue itself, or of the other FIFO-ness) is refused with a message
naming it (:class:`SettingRefused`). SQS queues keep the ranges Amazon SQS allows, so an SQS
client never reads a value it could not have set; their dead-letter queue is an SQS queue of the
same account and region, and a ``RedriveAllowPolicy`` on it is honoured.

**One set of defaults, whichever way a queue is made.** A queue starts from the store's defaults
(``queue_defaults`` of the config file applied), with what its door's own API gives a new queue
where that differs (:func:`door_defaults`): an SQS queue keeps unconsumed messages 4 days (SQS's
``CreateQueue``), a Disque queue's visibility timeout is 300 s (Disque's longest default
``RETRY``). ``spoolq create``, the console, declared queues and the doors themselves
(``CreateQueue``, a first ``ADDJOB``) all start there.

The visibility timeout means one thing at every door: how long a delivery stays claimed when the
consumer names no time: EmoDB's ``poll`` without ``ttl``, SQS's ``VisibilityTimeout``, and the
``RETRY`` of a Disque job added without one (at most a tenth of its ``TTL``, as Disque does).

Durations in the CLI and the config file may carry a unit (``90s``, ``15m``, ``12h``, ``30d``,
``2w``): :func:`parse_duration`. The config file's ``queue_defaults`` (:func:`queue_defaults`)
gives the archive setting of queues created without one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from spoolq.errors import InvalidArgument
from spoolq.queues.names import user_kind
from spoolq.settings.server import ConfigRefused, Settings
from spoolq.store.model import (
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_WAIT,
    DeadLetterPolicy,
    QueueConfig,
    QueueInfo,
    QueueKind,
)

DAY = 86_400
#: (low, high) of each numeric setting: every queue, and SQS queues (Amazon SQS's ranges)
RANGES: dict[str, tuple[int, int]] = {
    "visibility_timeout": (0, int(MAX_CLAIM_TTL)),
    "delay": (0, int(MAX_DELAY)),
    "retention": (60, 365 * DAY),
    "receive_wait": (0, int(MAX_WAIT)),
    "max_message_bytes": (1, 64 * 1024 * 1024),
    "max_receives": (1, 1_000_000),
    "archive_retention": (3_600, 100 * 365 * DAY),
}
SQS_RANGES: dict[str, tuple[int, int]] = {
    **RANGES, "delay": (0, 900), "retention": (60, 1_209_600), "max_message_bytes": (1_024, 1_048_576),
    "max_receives": (1, 1_000),
}
#: the QueueConfig field behind each numeric setting
FIELDS = {"visibility_timeout": "claim_ttl", "delay": "delay", "retention": "retention",
          "receive_wait": "receive_wait", "max_message_bytes": "max_message_bytes",
          "archive_retention": "archive_retention"}
SETTABLE = ("visibility_timeout", "delay", "retention", "receive_wait", "max_message_bytes", "dead_letter",
            "archive", "archive_retention")
_SQS_NAME = re.compile(r"^sqs:([0-9]{12}):([a-z0-9-]+):(.+)$")
_DURATION = re.compile(r"^\s*([0-9]+)\s*(s|m|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": DAY, "w": 7 * DAY}

#: a new SQS queue's retention, as SQS's CreateQueue gives it (4 days)
SQS_DEFAULT_RETENTION = 345_600.0
#: a new Disque queue's visibility timeout: Disque's longest default RETRY
DISQUE_DEFAULT_VISIBILITY_TIMEOUT = 300.0

#: the queue a name designates, or None when there is none; a door's lookup first refuses a queue
#: its caller may not send into (:func:`spoolq.access.auth.may_send_into`), so a refusal never tells
#: whether another team's queue exists
Lookup = Callable[[str], QueueInfo | None]


class SettingRefused(InvalidArgument):
    """A settings change that cannot be made; nothing was changed."""


def _seconds(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def door_defaults(door: str, base: QueueConfig) -> QueueConfig:
    """The config a new queue of ``door`` (queue, dedupq, sqs, mq, disque) starts from: ``base``
    (the store's defaults) with its door's own defaults where they differ (module docstring)."""
    if door == "sqs":
        return replace(base, retention=SQS_DEFAULT_RETENTION)
    if door == "disque":
        return replace(base, claim_ttl=DISQUE_DEFAULT_VISIBILITY_TIMEOUT)
    return base


def settings_of(info: QueueInfo) -> dict[str, Any]:
    """The settings JSON of a queue (its ``kind`` as users name it: :data:`spoolq.queues.names.KINDS`)."""
    c = info.config
    dead = None if c.dead_letter is None else {"queue": c.dead_letter.queue,
                                                 "max_receives": c.dead_letter.max_receives}
    return {"queue": info.name, "kind": user_kind(info.name, info.kind.value),
            "visibility_timeout": _seconds(c.claim_ttl), "delay": _seconds(c.delay),
            "retention": _seconds(c.retention), "receive_wait": _seconds(c.receive_wait),
            "max_message_bytes": c.max_message_bytes, "dead_letter": dead, "archive": c.archive,
            "archive_retention": _seconds(c.archive_retention)}


def _whole(name: str, value: Any, ranges: Mapping[str, tuple[int, int]]) -> int:
    low, high = ranges[name]
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise SettingRefused(f"{name} must be a whole number, got {json.dumps(value)[:80]}")
    if not low <= value <= high:
        raise SettingRefused(f"{name} must be between {low} and {high}, got {value}")
    return int(value)


def is_sqs_queue(store_name: str) -> bool:
    return _SQS_NAME.match(store_name) is not None


def changed_config(info: QueueInfo, changes: Mapping[str, Any], lookup: Lookup) -> QueueConfig:
    """``info``'s config with ``changes`` (settings JSON names) applied, all checked first."""
    if not isinstance(changes, Mapping):
        raise SettingRefused("the settings must be a JSON object")
    unknown = sorted(str(k) for k in changes if k not in SETTABLE)
    if unknown:
        raise SettingRefused(f"unknown setting {unknown[0]!r:.80}: the settings are {', '.join(SETTABLE)}")
    if not changes:
        raise SettingRefused(f"name at least one setting to change: {', '.join(SETTABLE)}")
    ranges = SQS_RANGES if is_sqs_queue(info.name) else RANGES
    values: dict[str, Any] = {}
    for name, field in FIELDS.items():
        if name in changes:
            number = _whole(name, changes[name], ranges)
            values[field] = number if field == "max_message_bytes" else float(number)
    if "archive" in changes:
        if not isinstance(changes["archive"], bool):
            raise SettingRefused(f"archive must be true or false, got {json.dumps(changes['archive'])[:80]}")
        values["archive"] = changes["archive"]
    if "dead_letter" in changes:
        values["dead_letter"] = _dead_letter(info, changes["dead_letter"], ranges, lookup)
    return replace(info.config, **values)


def _dead_letter(info: QueueInfo, raw: Any, ranges: Mapping[str, tuple[int, int]],
                 lookup: Lookup) -> DeadLetterPolicy | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) != {"queue", "max_receives"}:
        raise SettingRefused('dead_letter must be null or {"queue": <name>, "max_receives": <n>}')
    target, count = raw["queue"], _whole("max_receives", raw["max_receives"], ranges)
    if not isinstance(target, str) or not target:
        raise SettingRefused("dead_letter.queue must be a queue name")
    if target == info.name:
        raise SettingRefused(f"a queue cannot be its own dead-letter queue ({target!r})")
    dlq = lookup(target)
    if dlq is None:
        raise SettingRefused(f"the dead-letter queue {target!r:.120} does not exist (create it first)")
    if (dlq.kind is QueueKind.FIFO) != (info.kind is QueueKind.FIFO):
        raise SettingRefused("a FIFO queue needs a FIFO dead-letter queue" if info.kind is QueueKind.FIFO
                             else "a FIFO queue can only be the dead-letter queue of a FIFO queue")
    source = _SQS_NAME.match(info.name)
    if source is not None:
        dest = _SQS_NAME.match(target)
        if dest is None or dest.group(1, 2) != source.group(1, 2):
            raise SettingRefused("the dead-letter queue of an SQS queue is an SQS queue of the same account "
                                 "and region")
    _check_redrive_allowed(info.name, dlq)
    return DeadLetterPolicy(queue=target, max_receives=count)


def _arn(store_name: str) -> str | None:
    m = _SQS_NAME.match(store_name)
    return f"arn:aws:sqs:{m.group(2)}:{m.group(1)}:{m.group(3)}" if m else None


def _check_redrive_allowed(source: str, dlq: QueueInfo) -> None:
    """An SQS dead-letter queue's RedriveAllowPolicy applies whichever door sets the policy."""
    text = dlq.config.extra.get("RedriveAllowPolicy")
    if not text:
        return
    try:
        policy = json.loads(text)
    except ValueError:
        return
    if not isinstance(policy, dict):
        return
    permission = policy.get("redrivePermission", "allowAll")
    allowed = policy.get("sourceQueueArns") or []
    if permission == "denyAll" or (permission == "byQueue" and _arn(source) not in allowed):
        raise SettingRefused(f"the queue {dlq.name!r} does not allow this queue to use it as a "
                             "dead-letter queue (its RedriveAllowPolicy)")


# --- durations and defaults -------------------------------------------------------------------


def parse_duration(text: str, name: str = "duration") -> int:
    """Seconds of ``90``, ``90s``, ``15m``, ``12h``, ``30d`` or ``2w``.

    A twin of the client's ``spoolq_client.cli.queue_settings.parse_duration`` (and
    :func:`format_duration` of its ``format_duration``): the server imports nothing of the client
    distribution and the client installs without the server, so each keeps its copy, raising its
    own error; ``tests/cli/test_twin_helpers.py`` holds the two to the same answers."""
    m = _DURATION.match(str(text))
    if m is None:
        raise InvalidArgument(f"{name} must be a number of seconds or a number with s, m, h, d or w "
                              f"(30d), got {str(text)[:40]!r}")
    return int(m.group(1)) * _UNITS[m.group(2) or "s"]


def format_duration(seconds: float) -> str:
    """``2592000`` -> ``30d``; ``90`` -> ``90s``: the largest unit that divides it."""
    whole = int(seconds)
    if whole != seconds or whole == 0:
        return f"{seconds:g}s"
    for unit in ("w", "d", "h", "m"):
        if whole % _UNITS[unit] == 0:
            return f"{whole // _UNITS[unit]}{unit}"
    return f"{whole}s"


@dataclass(frozen=True)
class QueueDefaults:
    """The config file's ``queue_defaults``: settings of queues created without them."""

    archive: bool = False
    archive_retention: float = QueueConfig().archive_retention

    def apply(self, config: QueueConfig) -> QueueConfig:
        return replace(config, archive=self.archive, archive_retention=self.archive_retention)


def queue_defaults(config: Mapping[str, Any]) -> QueueDefaults:
    """``queue_defaults: {archive: true, archive_retention: 30d}`` of a parsed config file;
    :class:`~spoolq.settings.server.ConfigRefused` with one line for each mistake."""
    from spoolq.settings.config_file import unknown_keys

    raw = config.get("queue_defaults")
    if raw is None:
        return QueueDefaults()
    if not isinstance(raw, Mapping):
        raise ConfigRefused(["config: queue_defaults must be a mapping (archive, archive_retention)"])
    problems = unknown_keys(raw, ("archive", "archive_retention"), "config: queue_defaults: ")
    archive = raw.get("archive", False)
    if not isinstance(archive, bool):
        problems.append(f"config: queue_defaults.archive must be true or false, got {json.dumps(archive)[:60]}")
    retention = int(QueueDefaults().archive_retention)
    if "archive_retention" in raw:
        low, high = RANGES["archive_retention"]
        try:
            retention = parse_duration(raw["archive_retention"], "config: queue_defaults.archive_retention")
        except InvalidArgument as e:
            problems.append(str(e))
        else:
            if not low <= retention <= high:
                problems.append(f"config: queue_defaults.archive_retention must be between "
                                f"{format_duration(low)} and {format_duration(high)}")
    if problems:
        raise ConfigRefused(problems)
    return QueueDefaults(archive=archive, archive_retention=float(retention))


def load_queue_defaults(settings: Settings) -> QueueDefaults:
    """The ``queue_defaults`` of the config file ``settings`` names (none: archive off)."""
    if settings.config is None:
        return QueueDefaults()
    from spoolq.settings.config_file import load_config  # the one reader of the config file

    return queue_defaults(load_config(settings.config))
