"""Server-side checks of every SQS limit, with the code and wording AWS uses.

botocore validates no SQS range client-side (MaxNumberOfMessages=11, DelaySeconds=901,
an empty batch and a 1 MiB + 1 body all reach the server), so every parameter is
checked here before anything is changed, except the rules of a message the store holds every
door to (size, group and deduplication ids), which the store decides and the door only words:

==============================  =========================================================
body                            1 character at least; XML characters only (#x9, #xA, #xD,
                                #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF)
message size                    body + attribute names, types and values <= the queue's
                                MaximumMessageSize (the store decides; attributes_size
                                is what the attributes count)
message attributes              <= 10; names <= 256 letters or digits (any script, as AWS
                                accepts ``attr.1øßä``) and ``_.-``, no leading,
                                trailing or double ``.``, not ``AWS.``/``Amazon.``; values
                                XML characters (else InvalidParameterValue); type
                                String, Number or Binary with an optional ``.label``
system attributes               only ``AWSTraceHeader`` (String)
DelaySeconds                    0..900 (FIFO: per-message delay not allowed)
VisibilityTimeout               0..43,200 s
WaitTimeSeconds                 0..20 s
MaxNumberOfMessages             1..10
batch entries                   1..10, ids <= 80 of [A-Za-z0-9_-], distinct
group / dedup ids               1..128 printable ASCII (the store decides: model's
                                MESSAGE_KEY_RE; messages.py words its refusal)
attempt ids                     1..128 printable ASCII
==============================  =========================================================
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from spoolq.http.sqs.errors import (
    BatchEntryIdsNotDistinct,
    EmptyBatchRequest,
    InvalidBatchEntryId,
    InvalidMessageContents,
    InvalidParameterValue,
    MissingParameter,
    TooManyEntriesInBatchRequest,
)

MAX_DELAY = 900
MAX_VISIBILITY = 43_200
MAX_WAIT = 20
MAX_RECEIVE = 10
MAX_BATCH = 10
MAX_MESSAGE_ATTRIBUTES = 10
MAX_MESSAGE_BYTES = 1_048_576

_BAD_BODY_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ATTRIBUTE_NAME = re.compile(r"^[\w.-]{1,256}$")
_BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_FIFO_ID = re.compile(r"^[!-~]{1,128}$")
_DATA_TYPE = re.compile(r"^(String|Number|Binary)(\.[^\s]{1,250})?$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def invalid_value(name: str, value: object, reason: str) -> InvalidParameterValue:
    return InvalidParameterValue(f"Value {value} for parameter {name} is invalid. Reason: {reason}")


def required_str(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    if value is None or value == "":
        raise MissingParameter(name)
    if not isinstance(value, str):
        raise invalid_value(name, value, "Must be a string.")
    return value


def optional_str(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_value(name, value, "Must be a string.")
    return value


def optional_int(params: Mapping[str, Any], name: str, low: int, high: int, reason: str) -> int | None:
    """An integer parameter in ``low..high`` (``reason`` is AWS's wording of the range)."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid_value(name, value, reason)
    return value


def string_list(params: Mapping[str, Any], name: str) -> list[str]:
    value = params.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_value(name, value, "Must be a list of strings.")
    return list(value)


def string_map(params: Mapping[str, Any], name: str) -> dict[str, str]:
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_value(name, value, "Must be a map of strings.")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            item = "true" if item else "false"
        elif isinstance(item, int | float):
            item = str(item)
        if not isinstance(item, str):
            raise invalid_value(name, value, "Must be a map of strings.")
        out[str(key)] = item
    return out


_ALLOWED_CHARACTERS = ("the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | "
                       "#x10000 to #x10FFFF")


#: the characters of ASCII a body may not hold: the C0 controls but tab, line feed and carriage return
_BAD_ASCII = bytes(c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D))


def encoded_body(body: str) -> bytes:
    """``body`` in UTF-8, once checked as :func:`check_body` checks it. An ASCII body is checked by
    deleting the bytes it may not hold (one pass in C, several times faster than the pattern's
    search); any other, or one that holds such a byte, by :func:`check_body`."""
    if body.isascii():
        raw = body.encode("ascii")
        if len(raw.translate(None, _BAD_ASCII)) == len(raw):
            return raw
    check_body(body)
    return body.encode("utf-8")


def check_body(body: str) -> None:
    bad = _BAD_BODY_CHAR.search(body)
    if bad:
        raise InvalidMessageContents(
            f"Invalid binary character '#x{ord(bad.group()):X}' was found in the message body, {_ALLOWED_CHARACTERS}")


def _check_attribute_string(name: str, value: str) -> None:
    """A string attribute value: XML characters only, InvalidParameterValue as AWS answers it
    (recorded: test_invalid_string_attributes_cause_invalid_parameter_value_error)."""
    bad = _BAD_BODY_CHAR.search(value)
    if bad:
        raise InvalidParameterValue(
            f"Invalid binary character '#x{ord(bad.group()):X}' was found in the message attribute '{name}', "
            f"{_ALLOWED_CHARACTERS}")


def check_message_attributes(raw: object, system: bool = False) -> dict[str, dict[str, str]]:
    """Validated message (or system) attributes in wire form; raises on the first problem."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidParameterValue("MessageAttributes must be a map.")
    if not system and len(raw) > MAX_MESSAGE_ATTRIBUTES:
        raise InvalidParameterValue(
            f"Number of message attributes [{len(raw)}] exceeds the allowed maximum [{MAX_MESSAGE_ATTRIBUTES}].")
    out: dict[str, dict[str, str]] = {}
    for name, value in raw.items():
        if system:
            if name != "AWSTraceHeader":
                raise InvalidParameterValue(f"Message system attribute name '{name}' is invalid.")
        elif (not _ATTRIBUTE_NAME.match(name) or name.startswith(".") or name.endswith(".")
              or ".." in name or not name.isprintable()):
            raise InvalidParameterValue(
                f"The message attribute name '{name}' is invalid. Attribute name can contain A-Z, a-z, 0-9, "
                "underscore (_), hyphen (-), and period (.) characters.")
        elif name.lower().startswith(("aws.", "amazon.")):
            raise InvalidParameterValue(
                f"The message attribute name '{name}' is invalid. Names starting with 'AWS.' or 'Amazon.' "
                "are reserved for use by Amazon.")
        out[name] = _check_attribute_value(name, value, system)
    return out


def _check_attribute_value(name: str, value: object, system: bool) -> dict[str, str]:
    if not isinstance(value, dict):
        raise InvalidParameterValue(f"The message attribute '{name}' must contain a value.")
    data_type = value.get("DataType")
    if not data_type or not isinstance(data_type, str):
        raise InvalidParameterValue(
            f"The message attribute '{name}' must contain non-empty message attribute type.")
    if not _DATA_TYPE.match(data_type) or (system and data_type != "String"):
        raise InvalidParameterValue(
            f"The message attribute '{name}' has an invalid message attribute type, the set of supported "
            "type prefixes is Binary, Number, and String.")
    if value.get("StringListValues") or value.get("BinaryListValues"):
        raise InvalidParameterValue("Message attribute list values in SendMessage operation are not supported.")
    empty = InvalidParameterValue(f"The message attribute '{name}' must contain non-empty message attribute "
                                  f"value for message attribute type '{data_type}'.")
    if data_type.startswith("Binary"):
        binary = value.get("BinaryValue")
        if not isinstance(binary, str) or not binary:
            raise empty
        try:
            if not base64.b64decode(binary, validate=True):
                raise empty
        except (binascii.Error, ValueError):
            raise InvalidParameterValue(f"The message attribute '{name}' has an invalid binary value.") from None
        return {"DataType": data_type, "BinaryValue": binary}
    string = value.get("StringValue")
    if not isinstance(string, str) or not string:
        raise InvalidParameterValue(f"Message (user) attribute '{name}' must contain a non-empty value of type "
                                    f"'{data_type}'.")
    _check_attribute_string(name, string)
    if data_type.startswith("Number") and not _NUMBER.match(string):
        raise InvalidParameterValue(f"Can't cast the value of message (user) attribute '{name}' to a number.")
    return {"DataType": data_type, "StringValue": string}


def attributes_size(attributes: Mapping[str, Mapping[str, str]]) -> int:
    """Bytes the attributes count toward the message size limit."""
    total = 0
    for name, value in attributes.items():
        total += len(name.encode("utf-8")) + len(value["DataType"].encode("utf-8"))
        if "BinaryValue" in value:
            total += len(base64.b64decode(value["BinaryValue"]))
        else:
            total += len(value.get("StringValue", "").encode("utf-8"))
    return total


def check_fifo_id(name: str, value: str | None) -> str | None:
    if value is not None and not _FIFO_ID.match(value):
        raise invalid_value(name, value, f"{name} can only include alphanumeric and punctuation characters. "
                                         "1 to 128 in length.")
    return value


def check_entries(params: Mapping[str, Any], entry_name: str) -> list[Mapping[str, Any]]:
    """Validated batch entries: 1..10 dicts with distinct well-formed ids."""
    entries = params.get("Entries")
    if entries is None or entries == "" or (isinstance(entries, list) and not entries):
        raise EmptyBatchRequest(entry_name)
    if not isinstance(entries, list) or not all(map(isinstance, entries, repeat(dict))):  # each an object
        raise InvalidParameterValue("Entries must be a list of objects.")
    if len(entries) > MAX_BATCH:
        raise TooManyEntriesInBatchRequest(len(entries))
    seen: set[str] = set()
    for entry in entries:
        entry_id = entry.get("Id")
        if not isinstance(entry_id, str) or not _BATCH_ID.match(entry_id):
            raise InvalidBatchEntryId()
        if entry_id in seen:
            raise BatchEntryIdsNotDistinct(entry_id)
        seen.add(entry_id)
    return entries


def filter_names(names: Sequence[str], available: Mapping[str, Any]) -> dict[str, Any]:
    """``MessageAttributeNames`` filtering: ``All``, ``*``, ``.*``, exact names and ``prefix.*``
    (every name starting with ``prefix``: ``Custom.*`` selects ``Custom1`` and ``Custom.x``)."""
    if not names:
        return {}
    if "All" in names or ".*" in names or "*" in names:
        return dict(available)
    prefixes = tuple(n[:-2] for n in names if n.endswith(".*"))
    exact = set(names)
    return {k: v for k, v in available.items() if k in exact or (prefixes and k.startswith(prefixes))}
