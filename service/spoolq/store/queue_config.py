"""A queue's configuration (QueueConfig): checked, and its JSON form kept in ``meta.json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from spoolq.errors import (
    InvalidArgument,
)
from spoolq.store import layout as L
from spoolq.store.model import (
    MAX_CLAIM_TTL,
    MAX_DELAY,
    MAX_WAIT,
    DeadLetterPolicy,
    DedupScope,
    QueueConfig,
    QueueKind,
)


def config_to_json(config: QueueConfig) -> dict[str, Any]:
    data = asdict(config)
    data["extra"] = dict(config.extra)
    return data


def config_from_json(data: Mapping[str, Any]) -> QueueConfig:
    values = dict(data)
    dl = values.get("dead_letter")
    values["dead_letter"] = DeadLetterPolicy(**dl) if isinstance(dl, dict) else None
    values["extra"] = dict(values.get("extra") or {})
    # meta.json written before the scope had a field of its own kept it where the SQS door put it
    scope = values.get("dedup_scope") or values["extra"].get("DeduplicationScope") or DedupScope.QUEUE
    values["dedup_scope"] = DedupScope(scope) if scope in DedupScope._value2member_map_ else DedupScope.QUEUE
    known = set(QueueConfig.__dataclass_fields__)
    return QueueConfig(**{k: v for k, v in values.items() if k in known})


def check_number(name: str, value: float, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InvalidArgument(f"{name} must be a number, got {value!r}")
    if not lo <= value <= hi:
        raise InvalidArgument(f"{name} must be between {lo:g} and {hi:g}, got {value!r}")
    return float(value)


def check_int(name: str, value: int, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise InvalidArgument(f"{name} must be between {lo} and {hi}, got {value!r}")
    return value


def check_kind(value: str) -> QueueKind:
    try:
        return QueueKind(value)
    except ValueError:
        raise InvalidArgument(f"unknown queue kind {value!r:.80}: use one of "
                              f"{', '.join(k.value for k in QueueKind)}") from None


def validate_config(config: QueueConfig) -> QueueConfig:
    check_number("claim_ttl", config.claim_ttl, 0, MAX_CLAIM_TTL)
    check_number("delay", config.delay, 0, MAX_DELAY)
    check_number("retention", config.retention, 1, 10 * 365 * 86400)
    check_int("max_message_bytes", config.max_message_bytes, 1, 64 * 1024 * 1024)
    check_number("receive_wait", config.receive_wait, 0, MAX_WAIT)
    check_number("archive_retention", config.archive_retention, 1, 100 * 365 * 86400)
    if config.dead_letter is not None:
        L.check_queue_name(config.dead_letter.queue)
        check_int("max_receives", config.dead_letter.max_receives, 1, 1_000_000)
    if not isinstance(config.dedup_scope, DedupScope):
        raise InvalidArgument(f"dedup_scope must be one of {', '.join(s.value for s in DedupScope)}")
    for k, v in config.extra.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise InvalidArgument("queue extra attributes must map strings to strings")
    return config
