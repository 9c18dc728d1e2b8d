"""Publish and PublishBatch: each message checked (:mod:`.messages`), then delivered to every
confirmed subscription whose filter policy matches, with one call of the store's ``fan_out``: one
flush for every queue and every entry of a batch. The answer comes only after that flush, so an
answered publish is in every matching queue, whatever happens to the process or the power next.

What a subscribed queue receives: the notification's JSON (:mod:`.envelope`), or with
``RawMessageDelivery`` the message itself with the message attributes as SQS message attributes.
A FIFO topic's message goes to a FIFO queue with its group id and its deduplication id (so the
queue drops a retried publish too), to a standard queue without them. A FIFO topic publishes one
publish (or batch) at a time (its lock, :meth:`~spoolq.topics.catalog.TopicRegistry.fifo_publishing`):
sequence numbers, the five-minute deduplication window and the order in every queue agree.

A copy that cannot be delivered (its queue was deleted) goes to the subscription's dead-letter
queue (``RedrivePolicy``), in a second fan-out, or is dropped, as AWS drops it after its retries.
A copy for an ``sms`` subscription is not sent (this service sends no SMS) and counts as failed;
``email`` subscriptions stay pending, so they receive nothing.
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from spoolq.errors import QueueNotFound
from spoolq.http.sns import webhooks
from spoolq.http.sns.context import Env, phone_number, queue_of_arn
from spoolq.http.sns.envelope import Envelope, Notification
from spoolq.http.sns.errors import (
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidBatchEntryId,
    InvalidParameter,
    TooManyEntriesInBatchRequest,
    TopicNotFound,
)
from spoolq.http.sns.messages import MAX_MESSAGE_BYTES, Entry, entry
from spoolq.store.model import OutgoingMessage, SendResult
from spoolq.topics import filter_policy
from spoolq.topics.catalog import Subscription, Topic, TopicState

#: SenderId of the messages SNS delivers to SQS queues, as AWS shows it
SNS_SENDER = "AIDAIT2UOQQY3AUEKVGXU"
MAX_BATCH = 10
#: the protocols whose copies the delivery threads post (:mod:`.webhooks`)
WEBHOOKS = frozenset({"http", "https"})
_BATCH_ID = re.compile(r"^[A-Za-z0-9_-]+$")
#: FIFO publishes between two sweeps of a topic's expired deduplication records (per process)
SWEEP_EVERY = 256
_fifo_publishes = 0


@functools.lru_cache(maxsize=4096)
def _queue(endpoint: str) -> str | None:
    return queue_of_arn(endpoint)


def _topic(env: Env, params: Mapping[str, Any]) -> TopicState:
    number = params.get("PhoneNumber")
    if number:
        if not isinstance(number, str) or not phone_number(number):  # recorded: test_publish_wrong_phone_format
            raise InvalidParameter("PhoneNumber", f"{number} is not valid to publish to")
        raise InvalidParameter("PhoneNumber", "this service delivers no SMS")
    name = "TargetArn" if "TopicArn" not in params and params.get("TargetArn") else "TopicArn"
    arn = params.get(name, "")
    if name == "TargetArn" and ":endpoint/" in str(arn):
        raise InvalidParameter("TargetArn", "No endpoint found for the target arn specified")
    state = env.topics.read(env.topic_arn(arn, name))  # the topic and its subscriptions, read once
    if state.topic is None:
        raise TopicNotFound()
    return state


def publish(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    state = _topic(env, params)
    topic = state.topic
    assert topic is not None
    checked = entry(params, topic.key.fifo, topic.attributes.get("ContentBasedDeduplication") == "true")
    (message_id, sequence), = _publish(env, state, [checked])
    return {"MessageId": message_id, "SequenceNumber": sequence}


def publish_batch(env: Env, params: Mapping[str, Any]) -> dict[str, Any]:
    state = _topic(env, params)
    topic = state.topic
    assert topic is not None
    entries = params.get("PublishBatchRequestEntries")
    if entries in (None, "", []):
        raise EmptyBatchRequest()
    if not isinstance(entries, list):
        raise InvalidParameter("PublishBatchRequestEntries")
    if len(entries) > MAX_BATCH:
        raise TooManyEntriesInBatchRequest()
    ids: list[str] = []
    for item in entries:
        entry_id = item.get("Id") if isinstance(item, dict) else None
        if not isinstance(entry_id, str) or not entry_id:
            raise InvalidParameter("Id", "no value for required parameter")
        if len(entry_id) > 80:
            raise InvalidBatchEntryId(f"The Id of a batch entry in the batch request is too long: {entry_id}")
        if not _BATCH_ID.match(entry_id):
            raise InvalidBatchEntryId("The Id of a batch entry in the batch request contains an impermissible "
                                      f"character: {entry_id}")
        ids.append(entry_id)
    if len(set(ids)) != len(ids):
        raise BatchEntryIdsNotDistinct()
    content_dedup = topic.attributes.get("ContentBasedDeduplication") == "true"
    checked = [entry(item, topic.key.fifo, content_dedup,
                     f"publishBatchRequestEntries.{i}.member.messageAttributes")
               for i, item in enumerate(entries, 1)]
    if sum(c.size for c in checked) > MAX_MESSAGE_BYTES:
        raise BatchRequestTooLong()
    published = _publish(env, state, checked)
    return {"Successful": [{"Id": entry_id, "MessageId": message_id, "SequenceNumber": sequence}
                           for entry_id, (message_id, sequence) in zip(ids, published, strict=True)],
            "Failed": []}


def _publish(env: Env, state: TopicState, entries: Sequence[Entry]) -> list[tuple[str, str | None]]:
    """Deliver ``entries`` (in order) and return each one's (MessageId, SequenceNumber)."""
    now = env.clock()
    topic = state.topic
    assert topic is not None
    if not topic.key.fifo:
        notes = [_note(topic, e, now) for e in entries]
        _deliver(env, state, notes)
        return [(n.message_id, None) for n in notes]
    global _fifo_publishes
    with env.topics.fifo_publishing(topic.key) as window:
        out: list[tuple[str, str | None]] = []
        fresh: list[Notification] = []
        seen_here: dict[str, tuple[str, str]] = {}
        for e in entries:
            assert e.dedup_id is not None  # a FIFO entry has one (given, or the content's digest)
            earlier = seen_here.get(e.dedup_id) or window.seen(e.dedup_id)
            if earlier is not None:
                out.append(earlier)
                continue
            note = _note(topic, e, now, window.next_sequence())
            assert note.sequence is not None
            seen_here[e.dedup_id] = (note.message_id, note.sequence)
            fresh.append(note)
            out.append((note.message_id, note.sequence))
        _deliver(env, state, fresh)
        for note in fresh:
            assert note.dedup_id is not None and note.sequence is not None
            window.remember(note.dedup_id, note.message_id, note.sequence)
        _fifo_publishes += 1
        if _fifo_publishes % SWEEP_EVERY == 0:
            window.sweep()
    return out


def _note(topic: Topic, e: Entry, now: float, sequence: str | None = None) -> Notification:
    return Notification(str(uuid.uuid4()), topic.key.arn, e.messages, e.subject, now, e.attributes, sequence,
                        e.group_id, e.dedup_id)


def _policy(sub: Subscription) -> filter_policy.Policy | None:
    """The subscription's filter policy, compiled (cached by its text); ``None``: none."""
    text = sub.attributes.get("FilterPolicy")
    if not text:
        return None
    try:
        return filter_policy.compile_policy(text, sub.attributes.get("FilterPolicyScope", filter_policy.ATTRIBUTES))
    except filter_policy.PolicyError:
        return filter_policy.NOTHING  # checked when it was set: a record changed by hand matches nothing


class _Fields:
    """A message's values for filter policies, taken apart once for all its subscriptions."""

    def __init__(self, note: Notification) -> None:
        self.note = note
        self._attributes: Mapping[str, list[Any]] | None = None
        self._bodies: dict[str, Mapping[str, list[Any]] | None] = {}

    def of(self, policy: filter_policy.Policy, protocol: str) -> Mapping[str, list[Any]] | None:
        if policy.scope == filter_policy.ATTRIBUTES:
            if self._attributes is None:
                self._attributes = filter_policy.attribute_fields(self.note.attributes)
            return self._attributes
        if protocol not in self._bodies:
            self._bodies[protocol] = filter_policy.body_fields(self.note.message_for(protocol))
        return self._bodies[protocol]


def _deliver(env: Env, state: TopicState, notes: Sequence[Notification]) -> None:
    """One fan-out for every matching (subscription, message); the dead letters in a second."""
    topic = state.topic
    assert topic is not None
    envelopes: dict[str, Envelope] = {}
    targets: list[Subscription] = []
    deliveries: list[tuple[str, OutgoingMessage]] = []
    subs = state.derived.get("targets")  # worked out once per cached state of the topic
    if subs is None:
        subs = state.derived["targets"] = [(s, _queue(s.endpoint) if s.protocol == "sqs" else None, _policy(s))
                                           for s in state.subscriptions if s.confirmed]
    if env.webhooks is None:
        subs = [t for t in subs if t[0].protocol not in WEBHOOKS]
    filtered = unsent = 0
    posts: list[tuple[Subscription, Notification]] = []
    for note in notes:
        fields = _Fields(note)
        for sub, queue, policy in subs:
            if (queue is None and sub.protocol == "sqs") or (
                    policy is not None and not policy.matches_fields(fields.of(policy, sub.protocol))):
                filtered += 1
                continue
            if queue is None:  # http, https: posted once the queues hold the message
                if sub.protocol in WEBHOOKS:
                    posts.append((sub, note))
                else:  # sms: this service sends none
                    unsent += 1
                continue
            deliveries.append((queue, _message(env, topic, sub, note, queue, envelopes)))
            targets.append(sub)
    outcomes = env.store.fan_out(deliveries) if deliveries else []
    for sub, note in posts:
        _post(env, topic, sub, note, envelopes)
    dead = [(sub, delivery) for sub, delivery, outcome in zip(targets, deliveries, outcomes, strict=True)
            if isinstance(outcome, QueueNotFound)]
    dead_lettered = _dead_letters(env, dead) if dead else 0
    if env.count is not None:
        name = topic.key.store_name
        env.count(name, "published", len(notes))
        env.count(name, "delivered", len(deliveries) - len(dead) + len(posts))
        env.count(name, "filtered", filtered)
        env.count(name, "dead_lettered", dead_lettered)
        env.count(name, "failed", len(dead) - dead_lettered + unsent)


def _message(env: Env, topic: Topic, sub: Subscription, note: Notification, queue: str,
             envelopes: dict[str, Envelope]) -> OutgoingMessage:
    fifo_queue = queue.endswith(".fifo")
    # a standard topic's group id reaches standard queues too, a FIFO topic's only FIFO queues (recorded:
    # test_publish_message_group_id, test_fifo_topic_to_regular_sqs)
    group = note.group_id if fifo_queue or not topic.key.fifo else None
    dedup = note.dedup_id if fifo_queue else None
    stored: dict[str, Any] = {"sender": SNS_SENDER, "src": queue}
    if env.trace:  # the publisher's X-Ray header, as the queue's AWSTraceHeader (the SQS door's "sa")
        stored["sa"] = {"AWSTraceHeader": {"DataType": "String", "StringValue": env.trace}}
    if sub.attributes.get("RawMessageDelivery") == "true":
        body = note.message_for("sqs")
        extra = 0
        if note.attributes:
            stored["ma"] = {name: {"DataType": data_type,
                                   ("BinaryValue" if data_type.startswith("Binary") else "StringValue"): value}
                            for name, (data_type, value) in note.attributes.items()}
            extra = sum(len(n) + len(t) + len(v) for n, (t, v) in note.attributes.items())
        return OutgoingMessage(body.encode("utf-8"), attributes=stored, extra_bytes=extra, group_id=group,
                               dedup_id=dedup)
    envelope = _envelope(env, topic, note, sub.protocol, envelopes)
    return OutgoingMessage(envelope.for_subscription(sub.arn).encode("utf-8"), attributes=stored, group_id=group,
                           dedup_id=dedup)


def _envelope(env: Env, topic: Topic, note: Notification, protocol: str, envelopes: dict[str, Envelope]) -> Envelope:
    key = f"{note.message_id}\n{protocol}"
    envelope = envelopes.get(key)
    if envelope is None:
        envelope = envelopes[key] = Envelope(note, protocol, env.signer(), topic.attributes.get("SignatureVersion", "1"),
                                             env.caller.base_url)
    return envelope


def _post(env: Env, topic: Topic, sub: Subscription, note: Notification, envelopes: dict[str, Envelope]) -> None:
    """Hand an HTTP/HTTPS subscription's copy to the delivery threads (:mod:`.webhooks`)."""
    raw = sub.attributes.get("RawMessageDelivery") == "true"
    body = note.message_for(sub.protocol) if raw else \
        _envelope(env, topic, note, sub.protocol, envelopes).for_subscription(sub.arn)
    env.webhooks.deliver(sub, body, note.message_id, webhooks.retry_policy(sub, topic.attributes.get("DeliveryPolicy")),
                         raw, env.http_endpoints)


def _dead_letters(env: Env, dead: list[tuple[Subscription, tuple[str, OutgoingMessage]]]) -> int:
    """Put the copies whose queue is gone into their subscriptions' dead-letter queues; how many
    went there (a dead-letter queue that is gone too: the copy is dropped, as AWS drops it)."""
    deliveries: list[tuple[str, OutgoingMessage]] = []
    for sub, (_queue_name, message) in dead:
        try:
            policy = json.loads(sub.attributes.get("RedrivePolicy") or "{}")
        except ValueError:
            continue
        target = _queue(policy.get("deadLetterTargetArn", "")) if isinstance(policy, dict) else None
        if target is not None:  # the copy as it was, raw delivery's message attributes too
            fifo = target.endswith(".fifo")
            kept = {**message.attributes, "src": target} if isinstance(message.attributes, dict) else {}
            deliveries.append((target, OutgoingMessage(message.body, attributes=kept, extra_bytes=message.extra_bytes,
                                                       group_id=message.group_id,
                                                       dedup_id=message.dedup_id if fifo else None)))
    if not deliveries:
        return 0
    return sum(1 for outcome in env.store.fan_out(deliveries) if isinstance(outcome, SendResult))
