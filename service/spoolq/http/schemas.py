"""marshmallow schemas of the request and response bodies of the HTTP front doors.

The schemas are the OpenAPI contract (``openapi.yaml`` is exported from them) and they are
used to render the JSON bodies that are objects. The query parameters of each door are
declared by the door, next to the code that parses them (:mod:`spoolq.http.emodb.params`,
:mod:`spoolq.http.mq`), because EmoDB's error texts and check order must be reproduced exactly.

Top-level JSON that is not an object (a bare count, an array of ids, "any JSON value") has
no marshmallow form; :data:`ANY_JSON`, :data:`ID_LIST` and friends are the JSON Schema for
those, in one place.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from spoolq.queue_names import KINDS
from spoolq.store.model import TOKEN_RE

_EMO = r"[a-z0-9:@._-]"
#: EmoDB's rule: 1-255 of a-z 0-9 - . : @ _, not starting with a single underscore, not . or .. (written
#: without lookaheads, which contract checkers cannot generate from)
QUEUE_NAME_PATTERN = (rf"^(?:[a-z0-9:@-]{_EMO}{{0,254}}|__{_EMO}{{0,253}}|\.[a-z0-9:@_-]{_EMO}{{0,253}}"
                      rf"|\.\.{_EMO}{{1,253}})$")
#: a store name (of any door's queue: sqs:123456789012:us-east-1:Orders, disque:MyJobs)
STORE_NAME_PATTERN = r"^[A-Za-z0-9:@._-]{1,400}$"
#: an SQS region name
REGION_PATTERN = r"^[a-z]{2}(-[a-z0-9]+){1,3}$"
MQ_QUEUE_PATTERN = r"^[A-Za-z0-9:@._-]{1,255}$"
MOVE_REF_PATTERN = r"^[A-Z2-7]{42}$"
#: the kinds of queue as users name them (spoolq.queue_names.KINDS)
USER_KINDS = list(KINDS)
BATCH_TOKEN_PATTERN = TOKEN_RE.pattern


class StrictBoolean(fields.Boolean):
    """``true`` or ``false`` and nothing else (marshmallow's Boolean also takes 0, 1, "yes", ...)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("Not a valid boolean (true or false).")
        return value


# --- EmoDB responses -------------------------------------------------------------------------


class SuccessSchema(Schema):
    success = fields.Boolean(required=True, metadata={"description": "always true"})


class MessageSchema(Schema):
    id = fields.String(required=True, metadata={"description": "40 lowercase hex characters",
                                                "pattern": "^[0-9a-f]{40}$"})
    payload = fields.Raw(required=True, allow_none=True, metadata={"description": "the JSON value sent"})
    sentAt = fields.Float(metadata={"description": "extension (meta=true): when the message was sent, epoch seconds"})
    receiveCount = fields.Integer(metadata={
        "description": "extension (meta=true): deliveries so far, this one included on poll"})


class MoveRefSchema(Schema):
    id = fields.String(required=True, metadata={"pattern": MOVE_REF_PATTERN})


class MoveStatusSchema(Schema):
    from_ = fields.String(required=True, data_key="from")
    to = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(["IN_PROGRESS", "COMPLETE", "ERROR"]))


class QueueSummarySchema(Schema):
    name = fields.String(required=True, metadata={"description": "name under /queue/1 (or /dedupq/1 for dedup)"})
    kind = fields.String(required=True, validate=validate.OneOf(USER_KINDS), metadata={
        "description": "the kind of queue, as `spoolq create --kind` names it"})
    ready = fields.Integer(required=True, metadata={"description": "visible now (estimated beyond limit)"})
    claimed = fields.Integer(required=True, metadata={"description": "unexpired claims"})
    delayed = fields.Integer(required=True, metadata={"description": "not visible before their due time"})
    exact = fields.Boolean(required=True, metadata={"description": "false when ready was estimated"})


class DeadLetterSchema(Schema):
    queue = fields.String(required=True, metadata={
        "description": "the dead-letter queue's store name", "pattern": STORE_NAME_PATTERN})
    max_receives = fields.Integer(required=True, validate=validate.Range(1, 1_000_000), metadata={
        "description": "deliveries before the next one moves the message to the dead-letter queue "
                       "(SQS queues: 1-1000)"})


def _settings_fields(required: bool) -> dict[str, fields.Field[Any]]:
    """The settings of a queue (seconds are whole numbers); all present in an answer, any subset in a change."""

    def seconds(description: str, low: int, high: int) -> fields.Integer:
        return fields.Integer(required=required, strict=True, validate=validate.Range(low, high),
                              metadata={"description": description})
    return {
        "visibility_timeout": seconds("seconds a delivery stays claimed when the poll names no time", 0, 43_200),
        "delay": seconds("seconds before a new message becomes visible (SQS queues: at most 900)", 0, 365 * 86400),
        "retention": seconds("unconsumed messages older than this many seconds are dropped "
                             "(SQS queues: 60-1209600)", 60, 365 * 86400),
        "receive_wait": seconds("long-poll seconds of a poll that names no wait", 0, 20),
        "max_message_bytes": fields.Integer(required=required, validate=validate.Range(1, 64 * 1024 * 1024),
                                            metadata={"description": "largest message body in bytes "
                                                                     "(SQS queues: 1024-1048576)"}),
        "dead_letter": fields.Nested(DeadLetterSchema, required=required, allow_none=True,
                                     metadata={"description": "null: no dead-letter queue"}),
        "archive": StrictBoolean(required=required, metadata={
            "description": "keep acknowledged messages for audit (spoolq pipeline audit)"}),
        "archive_retention": seconds("seconds archived messages are kept", 3_600, 100 * 365 * 86400),
    }


#: the settings a change names; every other setting keeps its value
QueueSettingsChangeSchema = Schema.from_dict(_settings_fields(required=False), name="QueueSettingsChange")
#: every setting of a queue, whichever door made it
QueueSettingsSchema = Schema.from_dict({
    "queue": fields.String(required=True, metadata={"description": "the store name"}),
    "kind": fields.String(required=True, validate=validate.OneOf(USER_KINDS), metadata={
        "description": "the kind of queue, as `spoolq create --kind` names it"}),
    **_settings_fields(required=True)}, name="QueueSettings")


class NotAuthorizedSchema(Schema):
    reason = fields.String(required=True)


class QueueForbiddenSchema(Schema):
    queue = fields.String(required=True, metadata={"description": "first queue the key may not post to"})


class JsonErrorSchema(Schema):
    message = fields.String(required=True)


class ValidationErrorsSchema(Schema):
    errors = fields.List(fields.String(), required=True, validate=validate.Length(min=1),
                         metadata={"description": "what is wrong, one line each"})


class UnknownMoveSchema(Schema):
    id = fields.String(required=True)
    message = fields.String(required=True)
    suppressed = fields.List(fields.Raw(), required=True)


class UnavailableSchema(Schema):
    message = fields.String(required=True)
    retryAfterSeconds = fields.Integer(required=True)
    suppressed = fields.List(fields.Raw(), required=True)


class HealthSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(["ok", "warning", "unavailable"]))
    version = fields.String(required=True, metadata={"description": "the spoolq version serving"})
    format = fields.Integer(required=True, metadata={"description": "the on-disk format it writes (and the newest "
                                                                    "it reads) in the data directory"})
    store = fields.Dict(required=True, metadata={"description": "details: node and root; for /readyz also "
                                                                "free_bytes, free_inodes, headroom (ok, low, "
                                                                "full), journal_bytes, flush_seconds, the files "
                                                                "the file system refuses (damaged), and the "
                                                                "warning or the error"})
    config = fields.Dict(metadata={"description": "/readyz under spoolq serve: whether the last start or reload "
                                                  "of the config file was applied (reload: ok or failed), since when "
                                                  "the config in force is (in_force_since, Unix time), the last "
                                                  "attempt, and what was refused (problems)"})


class BatchCountSchema(Schema):
    count = fields.Integer(required=True, metadata={"description": "messages renewed or acknowledged"})


# --- JSON Schema for top-level non-object JSON -------------------------------------------------

ANY_JSON: dict[str, Any] = {"description": "any JSON value except null (null or an empty body gives 422)",
                            "not": {"type": "object", "nullable": True, "enum": [None]}}
ANY_LIST: dict[str, Any] = {"type": "array", "items": {}, "description": "messages; null elements are stored"}
BATCH_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "array", "items": {}},
                             "description": "queue name -> messages"}
ID_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
                           "description": "message ids"}
TOKEN_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "pattern": BATCH_TOKEN_PATTERN},
                              "description": "batch tokens"}
COUNT: dict[str, Any] = {"type": "integer", "format": "int64", "minimum": 0}
TEXT: dict[str, Any] = {"type": "string"}
BINARY: dict[str, Any] = {"type": "string", "format": "binary"}
