"""The JSON document SNS delivers (unless a subscription asks for raw delivery), signed as AWS signs it.

A notification::

    {
      "Type" : "Notification",
      "MessageId" : "<uuid>",
      "SequenceNumber" : "<20 digits>",          (FIFO topics, whose notifications are not signed)
      "TopicArn" : "arn:aws:sns:...",
      "Subject" : "...",                         (when the publish gave one)
      "Message" : "...",
      "Timestamp" : "2026-11-29T06:17:45.123Z",
      "SignatureVersion" : "1",
      "Signature" : "<base64>",
      "SigningCertURL" : "<base>/SimpleNotificationService-<key id>.pem",
      "UnsubscribeURL" : "<base>/?Action=Unsubscribe&SubscriptionArn=<arn>",
      "MessageAttributes" : {"<name>" : {"Type" : "String", "Value" : "..."}}   (when it has some)
    }

written as AWS writes it (two spaces of indent, ``" : "``). The signature covers AWS's string to
sign: for each of ``Message``, ``MessageId``, ``Subject`` (when present), ``Timestamp``,
``TopicArn`` and ``Type``, in that order, the name, a newline, the value and a newline (a
SubscriptionConfirmation signs ``Message``, ``MessageId``, ``SubscribeURL``, ``Timestamp``,
``Token``, ``TopicArn``, ``Type``). It is made once per publish: ``UnsubscribeURL``, which differs
per subscription, is not signed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from urllib.parse import quote

from spoolq.http.sns.signing import Signer

NOTIFICATION_FIELDS = ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
CONFIRMATION_FIELDS = ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type")


def timestamp(at: float) -> str:
    """AWS's timestamp: ISO 8601 in UTC with milliseconds and ``Z``."""
    ms = int(at * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def string_to_sign(fields: Mapping[str, str], names: tuple[str, ...]) -> str:
    return "".join(f"{name}\n{fields[name]}\n" for name in names if name in fields)


def unsubscribe_url(base_url: str, subscription_arn: str) -> str:
    return f"{base_url}/?Action=Unsubscribe&SubscriptionArn={quote(subscription_arn, safe=':')}"


@dataclass(frozen=True)
class Notification:
    """One published message as every subscription of it sees it."""

    message_id: str
    topic_arn: str
    #: the message for each protocol (MessageStructure=json), else ``{"default": message}``
    messages: Mapping[str, str]
    subject: str | None
    at: float
    #: name -> (DataType, StringValue or base64 BinaryValue)
    attributes: Mapping[str, tuple[str, str]]
    sequence: str | None = None
    group_id: str | None = None
    dedup_id: str | None = None

    def message_for(self, protocol: str) -> str:
        return self.messages.get(protocol, self.messages["default"])


def _line(name: str, value: str) -> str:
    return f"  {_text(name)} : {_text(value)}"


def _text(value: str) -> str:
    """A string as JSON text (non-ASCII kept as it is, as AWS writes it)."""
    return encode_basestring(value)


class Envelope:
    """The signed JSON of a notification for ``protocol``, made once and stamped per subscription:
    its text up to ``UnsubscribeURL`` and after it are written once (the C encoder, one value at a
    time: ``json.dumps`` with an indent would run the pure-Python encoder), so a copy for one more
    subscription costs one string join."""

    def __init__(self, note: Notification, protocol: str, signer: Signer, version: str, base_url: str) -> None:
        fields: dict[str, str] = {"Type": "Notification", "MessageId": note.message_id}
        if note.sequence is not None:
            fields["SequenceNumber"] = note.sequence
        fields["TopicArn"] = note.topic_arn
        if note.subject is not None:
            fields["Subject"] = note.subject
        fields["Message"] = note.message_for(protocol)
        fields["Timestamp"] = timestamp(note.at)
        if note.sequence is None:  # a FIFO topic's notifications are not signed (recorded: test_message_to_fifo_sqs)
            signature = signer.sign(string_to_sign(fields, NOTIFICATION_FIELDS), version)
            fields.update(SignatureVersion=version, Signature=signature, SigningCertURL=signer.cert_url(base_url))
        self._head = "{\n" + ",\n".join(_line(k, v) for k, v in fields.items()) + ",\n"
        self._tail = "\n}"
        if note.attributes:
            items = ",\n".join(f"    {_text(name)} : {{\"Type\":{_text(data_type)},\"Value\":{_text(value)}}}"
                                for name, (data_type, value) in note.attributes.items())
            self._tail = f',\n  "MessageAttributes" : {{\n{items}\n  }}\n}}'
        self._base_url = base_url

    def for_subscription(self, subscription_arn: str) -> str:
        return f"{self._head}{_line('UnsubscribeURL', unsubscribe_url(self._base_url, subscription_arn))}{self._tail}"
