"""marshmallow schemas of the console's JSON API (documented in ``openapi.yaml``)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from spoolq.http.schemas import (
    REGION_PATTERN,
    STORE_NAME_PATTERN,
    USER_KINDS,
    QueueSettingsChangeSchema,
    StrictBoolean,
)
from spoolq.store.model import ID_RE, RECEIPT_RE

DOORS = ["queue", "dedupq", "sqs", "mq", "disque"]
#: the kinds of queue as users name them (spoolq.queues.names.KINDS)
KINDS = USER_KINDS




#: a message id, or a receipt (one delivery of it)
RECEIPT_PATTERN = f"^(?:{ID_RE.pattern[1:-1]}|{RECEIPT_RE.pattern[1:-1]})$"


class ConsoleErrorSchema(Schema):
    message = fields.String(required=True)


class ConsoleSessionSchema(Schema):
    open = fields.Boolean(required=True, metadata={"description": "true when the service has no API keys"})
    principal = fields.String(required=True, metadata={"description": "the key's name (open, anonymous, ...)"})
    version = fields.String(required=True)
    node = fields.String(required=True)


class ConsoleCanSchema(Schema):
    get_status = fields.Boolean(required=True)
    post = fields.Boolean(required=True)
    poll = fields.Boolean(required=True)
    manage = fields.Boolean(required=True, metadata={
        "description": "purge, unclaim all, move, redrive, cancel: `poll` on most queues, `admin` on SQS queues"})


class ConsoleTotalsSchema(Schema):
    send = fields.Float(required=True)
    poll = fields.Float(required=True)
    ack = fields.Float(required=True)


class ConsoleDeadLetterSchema(Schema):
    queue = fields.String(required=True, metadata={"description": "store name of the dead-letter queue"})
    max_receives = fields.Integer(required=True)
    messages = fields.Integer(required=True, metadata={"description": "ready + delayed in the dead-letter queue"})


class ConsoleDoorConsumersSchema(Schema):
    door = fields.String(required=True, metadata={"description": "http door or disque"})
    waiting = fields.Integer(required=True, metadata={"description": "long polls (blocked GETJOBs) waiting now"})
    last_poll_at = fields.Float(required=True, allow_none=True, metadata={"description": "Unix time"})
    last_poll_age = fields.Float(required=True, allow_none=True, metadata={"description": "seconds ago"})


class ConsoleConsumersSchema(Schema):
    waiting = fields.Integer(required=True, metadata={
        "description": "polls waiting on the queue now: HTTP long polls and blocked Disque GETJOBs"})
    last_poll_age = fields.Float(required=True, allow_none=True, metadata={
        "description": "seconds since the latest poll through any door (empty polls too); null: none since the service started"})
    doors = fields.List(fields.Nested(ConsoleDoorConsumersSchema), required=True)


class ConsoleQueueRowSchema(Schema):
    store_name = fields.String(required=True, metadata={"description": "the name in the store (unique)"})
    door = fields.String(required=True, validate=validate.OneOf(DOORS))
    name = fields.String(required=True, metadata={"description": "the name users of the door know"})
    kind = fields.String(required=True, validate=validate.OneOf(KINDS), metadata={
        "description": "the kind of queue, as `spoolq create --kind` names it"})
    ready = fields.Integer(required=True)
    claimed = fields.Integer(required=True)
    delayed = fields.Integer(required=True)
    exact = fields.Boolean(required=True, metadata={"description": "false when ready was estimated"})
    oldest_age = fields.Float(required=True, metadata={"description": "seconds; 0 when nothing is ready"})
    dead_letter = fields.Nested(ConsoleDeadLetterSchema, allow_none=True, required=True)
    dead_letter_sources = fields.List(fields.String(), required=True)
    totals = fields.Nested(ConsoleTotalsSchema, required=True,
                           metadata={"description": "messages sent / delivered / acked since the service started"})
    consumers = fields.Nested(ConsoleConsumersSchema, required=True, metadata={"description": "who is consuming"})
    can = fields.Nested(ConsoleCanSchema, required=True)


class ConsoleMoveSchema(Schema):
    ref = fields.String(required=True)
    source = fields.String(required=True)
    destination = fields.String(required=True)
    state = fields.String(required=True, validate=validate.OneOf(["IN_PROGRESS", "COMPLETE", "ERROR", "CANCELLED"]))
    moved = fields.Integer(required=True)
    remaining = fields.Integer(required=True, metadata={"description": "messages still in the source"})
    started_at = fields.Float(required=True)
    finished_at = fields.Float(allow_none=True, required=True)
    error = fields.String(allow_none=True, required=True)
    max_per_second = fields.Integer(allow_none=True, required=True)


class ConsoleQueueListSchema(Schema):
    queues = fields.List(fields.Nested(ConsoleQueueRowSchema), required=True)
    moves = fields.List(fields.Nested(ConsoleMoveSchema), required=True)
    time = fields.Float(required=True, metadata={"description": "server time of the counters"})


class ConsoleSettingsSchema(Schema):
    visibility_timeout = fields.Float(required=True)
    delay = fields.Float(required=True)
    retention = fields.Float(required=True)
    max_message_bytes = fields.Integer(required=True)
    receive_wait = fields.Float(required=True)
    fifo = fields.Boolean(required=True)
    content_based_dedup = fields.Boolean(required=True)
    archive = fields.Boolean(required=True)
    archive_retention = fields.Float(required=True)


class ConsoleQueueDetailSchema(ConsoleQueueRowSchema):
    settings = fields.Nested(ConsoleSettingsSchema, required=True)
    tags = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    created_at = fields.Float(required=True)
    moves = fields.List(fields.Nested(ConsoleMoveSchema), required=True)


class ConsolePeekedSchema(Schema):
    id = fields.String(required=True)
    sent_at = fields.Float(required=True)
    receive_count = fields.Integer(required=True)
    claimed_until = fields.Float(allow_none=True, required=True)
    group_id = fields.String(allow_none=True, required=True)
    size = fields.Integer(required=True)
    body = fields.String(required=True, metadata={"description": "UTF-8 text, or base64 when binary"})
    encoding = fields.String(required=True, validate=validate.OneOf(["utf-8", "base64"]))
    attributes = fields.Dict(required=True)


class ConsolePeekSchema(Schema):
    messages = fields.List(fields.Nested(ConsolePeekedSchema), required=True)


class ConsoleReceiveBodySchema(Schema):
    limit = fields.Integer(strict=True, load_default=1, validate=validate.Range(1, 10), metadata={
        "description": "most messages to claim (1-10)"})
    visibility_timeout = fields.Integer(strict=True, load_default=None, allow_none=True, validate=validate.Range(1, 43_200),
                                        metadata={"description": "seconds the claim lasts (default: the queue's)"})


class ConsoleReceivedMessageSchema(ConsolePeekedSchema):
    receipt = fields.String(required=True, metadata={"description": "names this claim: acknowledge or release it"})


class ConsoleReceivedSchema(Schema):
    messages = fields.List(fields.Nested(ConsoleReceivedMessageSchema), required=True)


class ConsoleReceiptsBodySchema(Schema):
    receipts = fields.List(fields.String(metadata={"pattern": RECEIPT_PATTERN}), required=True,
                           validate=validate.Length(1, 100), metadata={
                               "description": "receipts from a receive (or message ids)"})


class ConsoleVisibilityBodySchema(ConsoleReceiptsBodySchema):
    visibility_timeout = fields.Integer(strict=True, required=True, validate=validate.Range(0, 43_200), metadata={
        "description": "seconds from now the claims last (0: visible again now)"})


class ConsoleResolveQuery(Schema):
    name = fields.String(required=True, validate=validate.Length(1, 2048), metadata={
        "description": "a queue's name as a user types it: its door's name, its store name, or an SQS queue URL"})


class ConsoleResolvedQueueSchema(Schema):
    store_name = fields.String(required=True)
    door = fields.String(required=True, validate=validate.OneOf(DOORS))
    name = fields.String(required=True, metadata={"description": "the name users of the door know"})
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))


class ConsoleResolvedSchema(Schema):
    queues = fields.List(fields.Nested(ConsoleResolvedQueueSchema), required=True, metadata={
        "description": "the queues the name stands for that the key may see: none (no such queue), one, "
                       "or several (ambiguous: name one by its store name)"})


class ConsoleDoneSchema(Schema):
    done = fields.List(fields.Boolean(), required=True, metadata={
        "description": "per receipt: false when the claim was no longer this one's (expired, or received again)"})


class ConsolePeekQuery(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(1, 200))


class ConsoleSendBodySchema(Schema):
    body = fields.String(required=True, metadata={"description": "the message body (UTF-8)"})
    format = fields.String(load_default="json", validate=validate.OneOf(["json", "text"]), metadata={
        "description": "`json` (default): the body must be one JSON value, else 400 and nothing is sent "
                       "(EmoDB queues store its compact form, as their door does); `text`: sent as typed"})
    group_id = fields.String(load_default=None, allow_none=True, metadata={"description": "FIFO queues: the message group"})
    dedup_id = fields.String(load_default=None, allow_none=True, validate=validate.Length(1, 128), metadata={
        "description": "FIFO queues: the deduplication id (default: the body's SHA-256 on a queue with "
                       "content-based deduplication, else a new random one)"})
    attributes = fields.Dict(keys=fields.String(validate=validate.Length(1, 256)),
                             values=fields.String(validate=validate.Length(0, 4096)), load_default=None,
                             validate=validate.Length(max=10), metadata={
                                 "description": "message attributes (strings), as SQS's String attributes"})
    delay = fields.Integer(strict=True, load_default=None, allow_none=True, validate=validate.Range(0, 900), metadata={
        "description": "seconds before the message becomes visible (default: the queue's delay)"})


class ConsoleSentSchema(Schema):
    id = fields.String(required=True)
    format = fields.String(required=True, validate=validate.OneOf(["json", "text"]))


class ConsoleConfirmBodySchema(Schema):
    confirm = fields.String(required=True, metadata={"description": "the queue's name, typed to confirm"})


class ConsoleCreateBodySchema(Schema):
    kind = fields.String(validate=validate.OneOf(KINDS), metadata={
        "description": "the kind of queue: emodb, dedup, sqs, sqs-fifo, mq, disque (or name door and fifo)"})
    door = fields.String(validate=validate.OneOf(DOORS), metadata={
        "description": "whose queue: queue (EmoDB), dedupq (EmoDB dedup), sqs, mq, disque (when no kind is named)"})
    name = fields.String(required=True, validate=validate.Length(min=1), metadata={
        "description": "the name users of that door know (each door's rule applies: 400 when it breaks it)",
        "pattern": "^[A-Za-z0-9:@._-]{1,393}$"})
    fifo = StrictBoolean(load_default=False, metadata={"description": "SQS: a FIFO queue (the name ends in .fifo)"})
    content_based_dedup = StrictBoolean(load_default=False, metadata={"description": "SQS FIFO queues"})
    region = fields.String(load_default=None, allow_none=True, validate=validate.Regexp(REGION_PATTERN), metadata={
        "description": "SQS: the region (default: the service's SQS region)", "pattern": REGION_PATTERN})
    settings = fields.Nested(QueueSettingsChangeSchema, load_default=None, metadata={
        "description": "settings the queue starts with (the others: their defaults); all checked before the "
                       "queue is made"})
    tags = fields.Dict(keys=fields.String(validate=validate.Length(1, 128)),
                       values=fields.String(validate=validate.Length(0, 256)), load_default=None,
                       validate=validate.Length(max=50), metadata={"description": "tags the queue starts with"})


class ConsoleCreatedSchema(Schema):
    store_name = fields.String(required=True)
    door = fields.String(required=True, validate=validate.OneOf(DOORS))
    name = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(KINDS), metadata={
        "description": "the kind of queue, as `spoolq create --kind` names it"})


class ConsoleDeleteEmptyBodySchema(Schema):
    queues = fields.List(fields.String(metadata={"pattern": STORE_NAME_PATTERN}), required=True,
                         validate=validate.Length(1, 1000),
                         metadata={"description": "store names; each is deleted only if it holds no message"})


class ConsoleDeleteEmptySchema(Schema):
    deleted = fields.List(fields.String(), required=True)
    not_empty = fields.List(fields.String(), required=True, metadata={
        "description": "kept: they held messages (perhaps sent a moment ago)"})
    missing = fields.List(fields.String(), required=True)


class ConsoleMoveBodySchema(Schema):
    to = fields.String(load_default=None, allow_none=True, metadata={
        "description": "store name of an existing destination queue (redrive: defaults to the source)"})
    max_per_second = fields.Integer(strict=True, load_default=None, allow_none=True, validate=validate.Range(1, 100_000))


class ConsoleOkSchema(Schema):
    ok = fields.Boolean(required=True)


class ConsoleDamagedSchema(Schema):
    path = fields.String(required=True, metadata={"description": "a file or directory the file system answers EIO for"})
    what = fields.String(required=True, metadata={"description": "what the service was doing with it"})
    first_seen = fields.Float(required=True)
    last_seen = fields.Float(required=True)
    fix = fields.String(required=True, metadata={"description": "what to run (on GlusterFS: the heal commands)"})


class ConsoleServerSchema(Schema):
    version = fields.String(required=True)
    format = fields.Integer(required=True, allow_none=True,
                            metadata={"description": "the on-disk format of the data directory (null: not opened)"})
    damaged = fields.List(fields.Nested(ConsoleDamagedSchema), required=True,
                          metadata={"description": "files the file system refused lately (this worker)"})
    node = fields.String(required=True)
    root = fields.String(required=True)
    free_bytes = fields.Integer(allow_none=True, required=True)
    fsync = fields.Boolean(required=True)
    flush = fields.String(required=True, metadata={
        "description": "how sends reach stable storage: journal, syncfs or fsync (none with fsync off)"})
    workers = fields.Integer(required=True)
    threads = fields.Integer(required=True)
    pid = fields.Integer(required=True)
    started_at = fields.Float(required=True)
    queues = fields.Integer(required=True)
    flushes = fields.Float(required=True, metadata={"description": "group-commit flushes (all workers)"})
    flush_seconds_avg = fields.Float(allow_none=True, required=True)
    flush_batch_avg = fields.Float(allow_none=True, required=True)
    flush_seconds_buckets = fields.Dict(keys=fields.String(), values=fields.Float(), required=True,
                                        metadata={"description": "cumulative histogram: le -> count"})
    flush_batch_buckets = fields.Dict(keys=fields.String(), values=fields.Float(), required=True)
    long_polls_waiting = fields.Float(required=True)
    open = fields.Boolean(required=True)


class ConsoleRatesQuery(Schema):
    window = fields.Integer(load_default=600, validate=validate.Range(60, 3600), metadata={
        "description": "seconds of history, up to the last hour"})
    queue = fields.String(load_default=None, metadata={"description": "one queue's store name (default: every queue)"})


class ConsoleQueueRatesSchema(Schema):
    send = fields.List(fields.Float(allow_none=True), required=True, metadata={"description": "sent per second"})
    poll = fields.List(fields.Float(allow_none=True), required=True, metadata={"description": "delivered per second"})
    ack = fields.List(fields.Float(allow_none=True), required=True, metadata={"description": "acknowledged per second"})


class ConsoleRatesSchema(Schema):
    interval = fields.Integer(required=True, metadata={"description": "seconds per point"})
    end = fields.Integer(required=True, metadata={"description": "Unix time the last point ends at"})
    slots = fields.Integer(required=True, metadata={"description": "points per series, oldest first"})
    covered = fields.List(fields.Boolean(), required=True, metadata={
        "description": "per point: whether the server has a sample for it (false: before it started)"})
    queues = fields.Dict(keys=fields.String(), values=fields.Nested(ConsoleQueueRatesSchema), required=True,
                         metadata={"description": "queues that moved in the window; null points: no sample"})


class ConsoleSubscriptionSchema(Schema):
    arn = fields.String(required=True)
    protocol = fields.String(required=True, metadata={"description": "sqs, http, https, email, email-json or sms"})
    endpoint = fields.String(required=True, metadata={"description": "the queue's ARN, the URL, the email address or the phone number"})
    queue = fields.String(allow_none=True, required=True, metadata={
        "description": "the store name of the queue it delivers to (sqs subscriptions)"})
    raw = fields.Boolean(required=True, metadata={"description": "raw message delivery (no envelope)"})
    pending = fields.Boolean(required=True, metadata={"description": "not confirmed by its endpoint yet"})
    filter_policy = fields.String(allow_none=True, required=True)
    filter_policy_scope = fields.String(allow_none=True, required=True)
    dead_letter = fields.String(allow_none=True, required=True, metadata={
        "description": "the dead-letter queue's ARN (RedrivePolicy)"})


class ConsoleTopicTotalsSchema(Schema):
    published = fields.Float(required=True)
    delivered = fields.Float(required=True)
    filtered = fields.Float(required=True)
    dead_lettered = fields.Float(required=True)
    failed = fields.Float(required=True)


class ConsoleTopicSchema(Schema):
    name = fields.String(required=True)
    store_name = fields.String(required=True, metadata={"description": "sns:<account>:<region>:<name>"})
    arn = fields.String(required=True)
    region = fields.String(required=True)
    kind = fields.String(required=True, validate=validate.OneOf(["sns", "sns-fifo"]))
    display_name = fields.String(required=True)
    tags = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    subscriptions = fields.List(fields.Nested(ConsoleSubscriptionSchema), required=True)
    totals = fields.Nested(ConsoleTopicTotalsSchema, required=True, metadata={
        "description": "messages since the service started (spoolq_topic_messages_total): rates are their change"})


class ConsoleTopicListSchema(Schema):
    topics = fields.List(fields.Nested(ConsoleTopicSchema), required=True)
    now = fields.Float(required=True)
