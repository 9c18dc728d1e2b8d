"""SQS queue attributes <-> the store's :class:`~spoolq.store.QueueConfig`.

=================================  ==============================  ========================
SQS attribute                      store                           range (AWS)
=================================  ==============================  ========================
VisibilityTimeout                  ``claim_ttl``                   0..43,200 (30)
DelaySeconds                       ``delay``                       0..900 (0)
MessageRetentionPeriod             ``retention``                   60..1,209,600 (345,600)
MaximumMessageSize                 ``max_message_bytes``           1,024..1,048,576
ReceiveMessageWaitTimeSeconds      ``receive_wait``                0..20 (0)
RedrivePolicy                      ``dead_letter`` (store name,    maxReceiveCount 1..1000
                                   max_receives)
ContentBasedDeduplication          ``content_based_dedup``         FIFO only
FifoQueue                          the queue kind (``fifo``)       create only
Policy, RedriveAllowPolicy,        ``extra`` (kept verbatim, not
KmsMasterKeyId,                    interpreted by the store)
KmsDataKeyReusePeriodSeconds,
SqsManagedSseEnabled,
DeduplicationScope,
FifoThroughputLimit
spoolq:Archive                     ``archive``                     true / false (false)
spoolq:ArchiveRetentionPeriod      ``archive_retention``           3,600..3,153,600,000 (2,592,000)
CreatedTimestamp,                  ``QueueInfo.created_at`` /      read only, epoch seconds
LastModifiedTimestamp              ``updated_at``
ApproximateNumberOfMessages[...]   ``counts()`` ready / claimed /  read only
                                   delayed
=================================  ==============================  ========================

``spoolq:Archive`` and ``spoolq:ArchiveRetentionPeriod`` are spoolq's own attributes (keep
acknowledged messages for audit): settable like any other, shown by GetQueueAttributes only when
named (``All`` lists Amazon's attributes alone). A queue created without them takes the server's
``queue_defaults``. ``extra`` keys starting with ``spoolq:`` are the door's own bookkeeping (the
last purge time, a DeduplicationScope set after creation) and never shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from spoolq.errors import QueueNotFound
from spoolq.http.sqs.context import Caller, arn_of_store_name, store_name_of_arn
from spoolq.http.sqs.errors import (
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidParameterCombination,
    InvalidParameterValue,
    QueueDoesNotExist,
)
from spoolq.store.model import DeadLetterPolicy, DedupScope, QueueConfig, QueueCounts, QueueInfo, QueueKind

#: integer attributes: (QueueConfig field, low, high)
INT_ATTRIBUTES: dict[str, tuple[str, int, int]] = {
    "VisibilityTimeout": ("claim_ttl", 0, 43_200),
    "DelaySeconds": ("delay", 0, 900),
    "MessageRetentionPeriod": ("retention", 60, 1_209_600),
    "MaximumMessageSize": ("max_message_bytes", 1_024, 1_048_576),
    "ReceiveMessageWaitTimeSeconds": ("receive_wait", 0, 20),
}
EXTRA_ATTRIBUTES = ("Policy", "RedriveAllowPolicy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds",
                    "SqsManagedSseEnabled")
FIFO_ONLY = ("ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit")
#: AWS words a FIFO-only attribute on a standard queue differently per attribute (recorded:
#: test_create_standard_queue_with_fifo_attribute_raises_error)
FIFO_ONLY_WORDING = {"DeduplicationScope": "You can specify the DeduplicationScope only when FifoQueue is set to true.",
                     "FifoThroughputLimit": "You can specify the FifoThroughputLimit only when FifoQueue is set to "
                                            "true."}
ENUM_VALUES = {"DeduplicationScope": ("messageGroup", "queue"),
               "FifoThroughputLimit": ("perQueue", "perMessageGroupId")}
READ_ONLY = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
             "ApproximateNumberOfMessagesNotVisible", "CreatedTimestamp", "LastModifiedTimestamp", "QueueArn")
#: spoolq's own attributes: (QueueConfig field, low, high); true/false for the archive switch
ARCHIVE = "spoolq:Archive"
ARCHIVE_RETENTION = ("spoolq:ArchiveRetentionPeriod", "archive_retention", 3_600, 3_153_600_000)
SPOOLQ_ATTRIBUTES = (ARCHIVE, ARCHIVE_RETENTION[0])
SETTABLE = (*INT_ATTRIBUTES, "RedrivePolicy", *EXTRA_ATTRIBUTES, *FIFO_ONLY, "FifoQueue", *SPOOLQ_ATTRIBUTES)
ALL_NAMES = frozenset({"All", *SETTABLE, *READ_ONLY})
DEFAULT_RETENTION = 345_600
PURGE_KEY = "spoolq:last_purge"
#: AWS keeps deduplicating a FIFO queue by the DeduplicationScope it was created with when the
#: attribute is changed later (recorded: test_fifo_change_to_high_throughput_after_creation,
#: test_fifo_change_to_regular_throughput_after_creation): ``extra["DeduplicationScope"]`` and the
#: config's ``dedup_scope`` (what the store deduplicates by) keep the created scope, and a later
#: value is kept here to be shown
SHOWN_DEDUP_SCOPE_KEY = "spoolq:dedup_scope_shown"


def dedup_scope(config: QueueConfig) -> str:
    """The scope a FIFO queue deduplicates in: the one it was created with."""
    return config.dedup_scope.value


def keep_created_dedup_scope(before: QueueConfig, after: QueueConfig) -> QueueConfig:
    """``after`` (SetQueueAttributes applied to ``before``) deduplicating in ``before``'s scope still."""
    wanted = after.extra.get("DeduplicationScope") or "queue"
    created = dedup_scope(before)
    extra = {**after.extra, "DeduplicationScope": created}
    if wanted == created:
        extra.pop(SHOWN_DEDUP_SCOPE_KEY, None)
    else:
        extra[SHOWN_DEDUP_SCOPE_KEY] = wanted
    return replace(after, extra=extra, dedup_scope=DedupScope(created))

DlqLookup = Callable[[str], QueueInfo]


def defaults(server: QueueConfig | None = None) -> QueueConfig:
    """The config of a queue created without attributes: AWS defaults, and the archive setting of
    ``server`` (the store's config for new queues: the config file's ``queue_defaults``)."""
    base = server if server is not None else QueueConfig()
    return QueueConfig(claim_ttl=30.0, delay=0.0, retention=float(DEFAULT_RETENTION),
                       max_message_bytes=1_048_576, receive_wait=0.0, archive=base.archive,
                       archive_retention=base.archive_retention)


def _int_value(name: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise InvalidAttributeValue(name) from None
    if not low <= number <= high:
        raise InvalidAttributeValue(name)
    return number


def _json_object(name: str, value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError:
        raise InvalidAttributeValue(name, f"Invalid JSON in {name}.") from None
    if not isinstance(parsed, dict):
        raise InvalidAttributeValue(name, f"{name} must be a JSON object.")
    return parsed


def parse_redrive_policy(value: str, source: str, fifo: bool, lookup: DlqLookup) -> DeadLetterPolicy | None:
    """The store's dead-letter policy for a RedrivePolicy string (``""`` / ``{}`` removes it)."""
    if not value.strip():
        return None
    try:
        policy = json.loads(value)
    except ValueError:
        raise InvalidParameterValue("Redrive policy is not a dict or valid json") from None
    if not isinstance(policy, dict):
        raise InvalidParameterValue("Redrive policy is not a dict or valid json")
    if not policy:
        return None
    if "deadLetterTargetArn" not in policy:
        raise InvalidParameterValue("Redrive policy does not contain deadLetterTargetArn")
    if "maxReceiveCount" not in policy:
        raise InvalidParameterValue("Redrive policy does not contain maxReceiveCount")
    raw_count = policy["maxReceiveCount"]
    try:
        count = int(raw_count)
    except (TypeError, ValueError):
        count = 0
    if isinstance(raw_count, bool) or not 1 <= count <= 1000:
        raise InvalidParameterValue(
            f"Value {value} for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: "
            f"{raw_count}, valid values are from 1 to 1000 both inclusive.")
    arn = str(policy["deadLetterTargetArn"])
    target = store_name_of_arn(arn)
    if target is None:
        raise QueueDoesNotExist(f"Could not find DLQ for {arn}")
    try:
        dlq = lookup(target)
    except (QueueDoesNotExist, QueueNotFound):
        raise QueueDoesNotExist(f"Could not find DLQ for {arn}") from None
    if fifo != (dlq.kind is QueueKind.FIFO):
        raise InvalidParameterCombination("Fifo queues cannot use non fifo dead letter queues" if fifo
                                          else "Standard queues cannot use fifo dead letter queues")
    _check_redrive_allowed(dlq, source, value)
    return DeadLetterPolicy(queue=target, max_receives=count)


def _check_redrive_allowed(dlq: QueueInfo, source: str, policy_text: str) -> None:
    allow = dlq.config.extra.get("RedriveAllowPolicy")
    if not allow:
        return
    parsed = json.loads(allow)
    permission = parsed.get("redrivePermission", "allowAll")
    source_arn = arn_of_store_name(source)
    if permission == "denyAll" or (permission == "byQueue" and source_arn not in parsed.get("sourceQueueArns", [])):
        raise InvalidParameterValue(
            f"Value {policy_text} for parameter RedrivePolicy is invalid. Reason: Queue "
            f"{arn_of_store_name(dlq.name)} does not allow this queue to use it as a dead-letter queue.")


def _check_redrive_allow_policy(value: str) -> None:
    parsed = _json_object("RedriveAllowPolicy", value)
    permission = parsed.get("redrivePermission")
    if permission not in ("allowAll", "denyAll", "byQueue"):
        raise InvalidAttributeValue("RedriveAllowPolicy", "Invalid value for redrivePermission.")
    arns = parsed.get("sourceQueueArns")
    if permission == "byQueue":
        if not isinstance(arns, list) or not 1 <= len(arns) <= 10:
            raise InvalidAttributeValue("RedriveAllowPolicy", "sourceQueueArns must list 1 to 10 queue ARNs.")
    elif arns:
        raise InvalidAttributeValue("RedriveAllowPolicy",
                                    "sourceQueueArns may only be given with redrivePermission byQueue.")


def _not_for_standard(name: str) -> InvalidAttributeName:
    return InvalidAttributeName(name, FIFO_ONLY_WORDING.get(name))


def _check_extra(name: str, value: str, fifo: bool) -> str:
    if name in FIFO_ONLY and not fifo:
        raise _not_for_standard(name)
    if name == "Policy":
        if value.strip():
            _json_object(name, value)
    elif name == "RedriveAllowPolicy":
        if value.strip():
            _check_redrive_allow_policy(value)
    elif name == "KmsDataKeyReusePeriodSeconds":
        return str(_int_value(name, value, 60, 86_400))
    elif name == "SqsManagedSseEnabled":
        if value.lower() not in ("true", "false"):
            raise InvalidAttributeValue(name)
        return value.lower()
    elif name in ENUM_VALUES and value not in ENUM_VALUES[name]:
        raise InvalidAttributeValue(name)
    return value


def apply(attributes: Mapping[str, str], config: QueueConfig, kind: QueueKind, store_name: str,
          lookup: DlqLookup) -> QueueConfig:
    """``config`` with ``attributes`` applied; every value is checked before anything changes."""
    fifo = kind is QueueKind.FIFO
    changes: dict[str, Any] = {}
    extra = dict(config.extra)
    for name, value in attributes.items():
        if name in INT_ATTRIBUTES:
            field, low, high = INT_ATTRIBUTES[name]
            number = _int_value(name, value, low, high)
            changes[field] = number if field == "max_message_bytes" else float(number)
        elif name == "RedrivePolicy":
            changes["dead_letter"] = parse_redrive_policy(value, store_name, fifo, lookup)
        elif name == "ContentBasedDeduplication":
            if not fifo:
                raise InvalidAttributeName(name)
            if value.lower() not in ("true", "false"):
                raise InvalidAttributeValue(name)
            changes["content_based_dedup"] = value.lower() == "true"
        elif name == ARCHIVE:
            if value.lower() not in ("true", "false"):
                raise InvalidAttributeValue(name)
            changes["archive"] = value.lower() == "true"
        elif name == ARCHIVE_RETENTION[0]:
            changes["archive_retention"] = float(_int_value(name, value, *ARCHIVE_RETENTION[2:]))
        elif name == "FifoQueue":
            if value.lower() not in ("true", "false"):
                raise InvalidAttributeValue(name)
            if (value.lower() == "true") != fifo:
                raise InvalidAttributeValue(name, "Modifying queue type is not supported.")
        elif name in EXTRA_ATTRIBUTES or name in FIFO_ONLY:
            checked = _check_extra(name, value, fifo)
            if checked.strip():
                extra[name] = checked
            else:
                extra.pop(name, None)
        else:
            raise InvalidAttributeName(name)
    shown_scope = attributes.get("DeduplicationScope") or extra.get(SHOWN_DEDUP_SCOPE_KEY) \
        or extra.get("DeduplicationScope", "queue")
    if fifo and extra.get("FifoThroughputLimit") == "perMessageGroupId" and shown_scope != "messageGroup":
        raise InvalidAttributeValue("FifoThroughputLimit",
                                    "perMessageGroupId requires DeduplicationScope messageGroup.")
    scope = extra.get("DeduplicationScope") or "queue"
    return replace(config, extra=extra, dedup_scope=DedupScope(scope) if fifo else DedupScope.QUEUE, **changes)


def redrive_policy_text(policy: DeadLetterPolicy) -> str:
    return json.dumps({"deadLetterTargetArn": arn_of_store_name(policy.queue),
                       "maxReceiveCount": policy.max_receives})


def render(info: QueueInfo, counts: QueueCounts | None, caller: Caller, queue_name: str) -> dict[str, str]:
    """Every attribute of a queue, as GetQueueAttributes ``All`` shows it."""
    config = info.config
    extra = config.extra
    out: dict[str, str] = {}
    if counts is not None:
        out["ApproximateNumberOfMessages"] = str(counts.ready)
        out["ApproximateNumberOfMessagesDelayed"] = str(counts.delayed)
        out["ApproximateNumberOfMessagesNotVisible"] = str(counts.claimed)
    out["CreatedTimestamp"] = str(int(info.created_at))
    out["DelaySeconds"] = str(int(config.delay))
    out["LastModifiedTimestamp"] = str(int(info.updated_at))
    out["MaximumMessageSize"] = str(config.max_message_bytes)
    out["MessageRetentionPeriod"] = str(int(config.retention))
    out["QueueArn"] = caller.arn(queue_name)
    out["ReceiveMessageWaitTimeSeconds"] = str(int(config.receive_wait))
    out["VisibilityTimeout"] = str(int(config.claim_ttl))
    out["SqsManagedSseEnabled"] = extra.get("SqsManagedSseEnabled", "false" if extra.get("KmsMasterKeyId") else "true")
    if extra.get("Policy"):
        out["Policy"] = extra["Policy"]
    if config.dead_letter is not None:
        out["RedrivePolicy"] = redrive_policy_text(config.dead_letter)
    if extra.get("RedriveAllowPolicy"):
        out["RedriveAllowPolicy"] = extra["RedriveAllowPolicy"]
    if info.kind is QueueKind.FIFO:
        out["ContentBasedDeduplication"] = "true" if config.content_based_dedup else "false"
        out["DeduplicationScope"] = extra.get(SHOWN_DEDUP_SCOPE_KEY) or extra.get("DeduplicationScope", "queue")
        out["FifoQueue"] = "true"
        out["FifoThroughputLimit"] = extra.get("FifoThroughputLimit", "perQueue")
    if extra.get("KmsMasterKeyId"):
        out["KmsMasterKeyId"] = extra["KmsMasterKeyId"]
        out["KmsDataKeyReusePeriodSeconds"] = extra.get("KmsDataKeyReusePeriodSeconds", "300")
    out[ARCHIVE] = "true" if config.archive else "false"
    out[ARCHIVE_RETENTION[0]] = str(int(config.archive_retention))
    return out


def differing_attribute(requested: Mapping[str, str], current: Mapping[str, str]) -> str | None:
    """CreateQueue on an existing queue: the first attribute it names whose value differs from the
    queue's (after normalising), or ``None`` when all match."""
    for name, value in requested.items():
        have = current.get(name)
        if name in ("RedrivePolicy", "Policy", "RedriveAllowPolicy"):
            try:
                want_obj = json.loads(value) if value.strip() else None
                have_obj = json.loads(have) if have else None
            except ValueError:
                return name
            if isinstance(want_obj, dict) and "maxReceiveCount" in want_obj:
                want_obj["maxReceiveCount"] = int(want_obj["maxReceiveCount"])
            if want_obj != have_obj:
                return name
        elif name == "FifoQueue" and have is None:
            if value.lower() != "false":
                return name
        elif have is None or have.lower() != value.strip().lower():
            return name
    return None
