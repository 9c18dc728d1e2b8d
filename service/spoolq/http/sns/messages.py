"""What a publish gives, checked as AWS checks it: the message, its subject and structure, its
message attributes, and a FIFO topic's group and deduplication ids (one :class:`Entry` per Publish,
or per PublishBatch entry). Errors are AWS's recorded wording (LocalStack's snapshots)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spoolq.http.sns.errors import InvalidParameter, ParameterValueInvalid, ValidationError

#: a message with its attributes, at most (AWS: 256 KiB)
MAX_MESSAGE_BYTES = 262_144
MAX_SUBJECT = 100
_ATTRIBUTE_NAME_CHAR = re.compile(r"[A-Za-z0-9_.-]")
_KEY = re.compile(r"^[\x21-\x7e]{1,128}$")


@dataclass(frozen=True)
class Entry:
    """One message to publish, checked."""

    messages: Mapping[str, str]
    subject: str | None
    attributes: Mapping[str, tuple[str, str]]
    group_id: str | None
    dedup_id: str | None
    size: int


def _attribute_name(name: str) -> None:
    if len(name.encode("utf-8")) >= 256:
        raise ParameterValueInvalid("Length of message attribute name must be less than 256 bytes.")
    if name.startswith("."):
        raise ParameterValueInvalid("Invalid message attribute name starting with character '.' was found.")
    if name.endswith("."):
        raise ParameterValueInvalid("Invalid message attribute name ending with character '.' was found.")
    if ".." in name:
        raise ParameterValueInvalid("Message attribute name can not have successive '.' character.")
    for char in name:
        if not _ATTRIBUTE_NAME_CHAR.match(char):
            raise ParameterValueInvalid(
                f"Invalid non-alphanumeric character '#x{ord(char):X}' was found in the message attribute name. "
                "Can only include alphanumeric characters, hyphens, underscores, or dots.")


def message_attributes(raw: Any, where: str = "messageAttributes") -> dict[str, tuple[str, str]]:
    """``MessageAttributes`` as name -> (DataType, value): a string, or base64 of a binary value."""
    if raw is None or raw == "":
        return {}
    if not isinstance(raw, dict):
        raise InvalidParameter("MessageAttributes")
    out: dict[str, tuple[str, str]] = {}
    for name, value in raw.items():
        _attribute_name(name)
        value = value if isinstance(value, dict) else {}
        data_type = value.get("DataType")
        if not isinstance(data_type, str) or not data_type:
            raise ValidationError(f"1 validation error detected: Value null at '{where}.{name}.member.dataType' "
                                  "failed to satisfy constraint: Member must not be null")
        base, dot, label = data_type.partition(".")
        if base not in ("String", "Number", "Binary") or (dot and not label):
            raise ParameterValueInvalid(f"The message attribute '{name}' has an invalid message attribute type, "
                                        "the set of supported type prefixes is Binary, Number, and String.")
        string, binary = value.get("StringValue"), value.get("BinaryValue")
        field, other = (binary, string) if base == "Binary" else (string, binary)
        if field is None and other is not None:
            used = "Binary" if base == "Binary" else "String"
            raise ParameterValueInvalid(f"The message attribute '{name}' with type '{base}' must use field '{used}'.")
        if not isinstance(field, str) or field == "":
            raise ParameterValueInvalid(f"The message attribute '{name}' must contain non-empty message attribute "
                                        f"value for message attribute type '{base}'.")
        if base == "Number":
            try:
                float(field)
            except ValueError:
                raise ParameterValueInvalid(f"Could not cast message attribute '{name}' value to number.") from None
        if base == "Binary":
            try:
                base64.b64decode(field, validate=True)
            except (binascii.Error, ValueError):
                raise ParameterValueInvalid(f"The message attribute '{name}' has an invalid binary value.") from None
        out[name] = (data_type, field)
    return out


def attributes_size(attributes: Mapping[str, tuple[str, str]]) -> int:
    """What the attributes count toward the message's size (name, type and value, as SQS counts them)."""
    total = 0
    for name, (data_type, value) in attributes.items():
        raw = len(base64.b64decode(value)) if data_type.startswith("Binary") else len(value.encode("utf-8"))
        total += len(name.encode("utf-8")) + len(data_type.encode("utf-8")) + raw
    return total


def _messages(message: Any, structure: Any) -> dict[str, str]:
    if not isinstance(message, str) or message == "":
        raise InvalidParameter("Empty message")
    if structure in (None, ""):
        return {"default": message}
    if structure != "json":
        raise InvalidParameter("MessageStructure")
    try:
        parsed = json.loads(message)
    except ValueError:
        raise InvalidParameter("Message Structure - JSON message body failed to parse") from None
    if not isinstance(parsed, dict):
        raise InvalidParameter("Message Structure - JSON message body failed to parse")
    if not isinstance(parsed.get("default"), str):
        raise InvalidParameter("Message Structure - No default entry in JSON message body")
    # a protocol's entry that is not a string is left out: that protocol gets the default (recorded:
    # test_message_structure_json_to_sqs)
    return {str(k): v for k, v in parsed.items() if isinstance(v, str)}


def _subject(subject: Any) -> str | None:
    if subject is None:
        return None
    # ASCII that begins with a letter, digit or punctuation: no line break, no control character
    if not isinstance(subject, str) or not subject or len(subject) > MAX_SUBJECT or not subject.isascii() \
            or not subject.isprintable() or subject[0] == " ":
        raise InvalidParameter("Subject")
    return subject


def entry(params: Mapping[str, Any], fifo: bool, content_dedup: bool, where: str = "messageAttributes") -> Entry:
    """One publish's message, checked in AWS's order; a FIFO topic's ids (content-based
    deduplication: the SHA-256 of the message)."""
    messages = _messages(params.get("Message"), params.get("MessageStructure"))
    subject = _subject(params.get("Subject"))
    attributes = message_attributes(params.get("MessageAttributes"), where)
    size = len(params["Message"].encode("utf-8")) + attributes_size(attributes)
    if size > MAX_MESSAGE_BYTES:
        raise InvalidParameter("Message too long")
    group, dedup = params.get("MessageGroupId"), params.get("MessageDeduplicationId")
    for name, value in (("MessageGroupId", group), ("MessageDeduplicationId", dedup)):
        if value is not None and (not isinstance(value, str) or not _KEY.match(value)):
            raise InvalidParameter(name, f"{name} can only include alphanumeric and punctuation characters. "
                                         "1 to 128 in length.")
    if fifo:
        if group is None:
            raise InvalidParameter("The MessageGroupId parameter is required for FIFO topics")
        if dedup is None:
            if not content_dedup:
                raise InvalidParameter("The topic should either have ContentBasedDeduplication enabled or "
                                       "MessageDeduplicationId provided explicitly")
            dedup = hashlib.sha256(params["Message"].encode("utf-8")).hexdigest()
    elif dedup is not None:
        raise InvalidParameter("MessageDeduplicationId", "The request includes MessageDeduplicationId parameter "
                                                         "that is not valid for this topic type")
    return Entry(messages, subject, attributes, group, dedup, size)
