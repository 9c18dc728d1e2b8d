"""marshmallow schemas of every request and response of the HTTP front doors.

The schemas are the OpenAPI contract (``openapi.yaml`` is exported from them) and they are
used to render the JSON bodies that are objects. Request *parsing* is done by the doors
themselves, because EmoDB's error texts and check order must be reproduced exactly; the
query schemas here document the same names, defaults and ranges the doors enforce.

Top-level JSON that is not an object (a bare count, an array of ids, "any JSON value") has
no marshmallow form; :data:`ANY_JSON`, :data:`ID_LIST` and friends are the JSON Schema for
those, in one place.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from spoolq.http import emodb_wire as wire

QUEUE_NAME_PATTERN = r"^[a-z0-9:@._-]{1,255}$"
MQ_QUEUE_PATTERN = r"^[A-Za-z0-9:@._-]{1,255}$"
MOVE_REF_PATTERN = r"^[A-Z2-7]{42}$"


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
    kind = fields.String(required=True, validate=validate.OneOf(["standard", "dedup", "fifo"]))
    ready = fields.Integer(required=True, metadata={"description": "visible now (estimated beyond limit)"})
    claimed = fields.Integer(required=True, metadata={"description": "unexpired claims"})
    delayed = fields.Integer(required=True, metadata={"description": "not visible before their due time"})
    exact = fields.Boolean(required=True, metadata={"description": "false when ready was estimated"})


class NotAuthorizedSchema(Schema):
    reason = fields.String(required=True)


class QueueForbiddenSchema(Schema):
    queue = fields.String(required=True, metadata={"description": "first queue the key may not post to"})


class JsonErrorSchema(Schema):
    message = fields.String(required=True)


class ValidationErrorsSchema(Schema):
    errors = fields.List(fields.Raw(), required=True)


class UnknownMoveSchema(Schema):
    id = fields.String(required=True)
    message = fields.String(required=True)
    suppressed = fields.List(fields.Raw(), required=True)


class UnavailableSchema(Schema):
    message = fields.String(required=True)
    retryAfterSeconds = fields.Integer(required=True)
    suppressed = fields.List(fields.Raw(), required=True)


class HealthSchema(Schema):
    status = fields.String(required=True, validate=validate.OneOf(["ok", "unavailable"]))
    store = fields.Dict(required=True, metadata={"description": "store.health() details"})


# --- EmoDB query parameters ------------------------------------------------------------------


def _bool_param() -> fields.String:
    return fields.String(metadata={"description": '"true" or "false" in any case; accepted and ignored',
                                   "enum": ["true", "false", "TRUE", "FALSE"]})


class PartitionedQuery(Schema):
    partitioned = _bool_param()


class SendQuery(Schema):
    delay = fields.Float(validate=validate.Range(0, 365 * 86400),
                         metadata={"description": "extension: seconds before the message becomes visible"})
    ttl = fields.Float(validate=validate.Range(0, 365 * 86400, min_inclusive=False),
                       metadata={"description": "extension: drop the message if not consumed within this"})
    atMostOnce = fields.String(metadata={
        "description": "extension: deliver at most once, never redeliver", "enum": ["true", "false"]})


class PollQuery(Schema):
    partitioned = _bool_param()
    ttl = fields.Integer(load_default=30, validate=validate.Range(0, wire.MAX_CLAIM_TTL),
                         metadata={"description": "claim seconds; 0 returns messages without claiming"})
    limit = fields.Integer(load_default=10, validate=validate.Range(1, wire.MAX_POLL_LIMIT))
    wait = fields.Float(validate=validate.Range(0, wire.MAX_WAIT),
                        metadata={"description": "extension: long-poll up to this many seconds"})
    meta = fields.String(metadata={
        "description": 'extension: "true" adds sentAt (epoch seconds) and receiveCount to each message',
        "enum": ["true", "false"]})


class PeekQuery(Schema):
    limit = fields.Integer(load_default=10, validate=validate.Range(1, wire.MAX_PEEK_LIMIT))
    meta = fields.String(metadata={
        "description": 'extension: "true" adds sentAt (epoch seconds) and receiveCount to each message',
        "enum": ["true", "false"]})


class DedupPeekQuery(PeekQuery):
    partitioned = _bool_param()


class SizeQuery(Schema):
    limit = fields.Integer(validate=validate.Range(1, wire.JAVA_LONG_MAX),
                           metadata={"description": "count exactly up to this, estimate beyond", "format": "int64"})


class DedupSizeQuery(SizeQuery):
    partitioned = _bool_param()


class RenewQuery(Schema):
    partitioned = _bool_param()
    ttl = fields.Integer(load_default=30, validate=validate.Range(0, wire.MAX_CLAIM_TTL),
                         metadata={"description": "seconds; extend-only; 0 releases the claims"})


class MoveQuery(Schema):
    from_ = fields.String(required=True, data_key="from", metadata={"pattern": QUEUE_NAME_PATTERN})
    to = fields.String(required=True, metadata={"pattern": QUEUE_NAME_PATTERN})


class ListQueuesQuery(Schema):
    prefix = fields.String(load_default="", metadata={"description": "only queues whose name starts with this"})
    limit = fields.Integer(load_default=10000, validate=validate.Range(1, wire.JAVA_LONG_MAX),
                           metadata={"description": "count each queue exactly up to this, estimate beyond",
                                     "format": "int64"})


# --- MQ --------------------------------------------------------------------------------------


class MqFetchQuery(Schema):
    wait = fields.Float(validate=validate.Range(0, wire.MAX_WAIT),
                        metadata={"description": "extension: long-poll up to this many seconds"})
    ttl = fields.Float(validate=validate.Range(1, 43200),
                       metadata={"description": "extension: seconds before an unacknowledged message is redelivered"})


class MqSendQuery(Schema):
    delay = fields.Float(validate=validate.Range(0, 365 * 86400),
                         metadata={"description": "extension: seconds before the message becomes visible"})
    ttl = fields.Float(validate=validate.Range(0, 365 * 86400, min_inclusive=False),
                       metadata={"description": "extension: drop the message if not consumed within this"})


# --- JSON Schema for top-level non-object JSON -------------------------------------------------

ANY_JSON: dict[str, Any] = {"description": "any JSON value except null (null or an empty body gives 422)"}
ANY_LIST: dict[str, Any] = {"type": "array", "items": {}, "description": "messages; null elements are stored"}
BATCH_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "array", "items": {}},
                             "description": "queue name -> messages"}
ID_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}, "description": "message ids"}
COUNT: dict[str, Any] = {"type": "integer", "format": "int64", "minimum": 0}
TEXT: dict[str, Any] = {"type": "string"}
BINARY: dict[str, Any] = {"type": "string", "format": "binary"}
