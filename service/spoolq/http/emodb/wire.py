"""EmoDB wire details: payload JSON, query parameters and error bodies, exactly as classic EmoDB.

Everything here is pure (no Flask request access) so it can be unit-tested directly.

Payloads
    A message payload is any JSON value. The server parses it, rejects numbers Jackson's
    ``JsonValidator`` rejects (NaN/Infinity doubles such as ``1e400``, integers that overflow a
    double), and stores the **compact re-serialization** as the message body: no whitespace,
    object key order kept, integers printed exactly, doubles printed the way Java's
    ``Double.toString`` prints them (``1.0``, ``100.0`` for ``1e2``, ``1.0E10``). The 30720-byte
    limit counts those stored bytes. Bodies read back are embedded verbatim into
    ``{"id":...,"payload":...}``.

Query parameters
    Integers follow Java ``Integer.valueOf``/``Long.valueOf`` (optional sign, ASCII digits, no
    whitespace, range-checked); anything else is ``"<raw>" is not a number.``. Booleans are
    ``true``/``false`` in any case, else ``"<raw>" must be "true" or "false".``. A parameter that
    is present but empty is parsed (and fails), never replaced by its default.

Errors
    :class:`EmoHttpError` carries a finished response (status, content type, body, headers);
    the blueprint's error handler renders it unchanged.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Mapping
from typing import Any

import orjson

from spoolq import queue_names
from spoolq.http import framing

IAE = "java.lang.IllegalArgumentException"
UNAUTHORIZED_EXC = "com.bazaarvoice.emodb.common.api.UnauthorizedException"
UNKNOWN_MOVE_EXC = "com.bazaarvoice.emodb.queue.api.UnknownMoveException"
UNAVAILABLE_EXC = "com.bazaarvoice.emodb.common.api.ServiceUnavailableException"

MAX_MESSAGE_BYTES = 30 * 1024
MAX_CLAIM_TTL = 3600
MAX_POLL_LIMIT = 1000
MAX_PEEK_LIMIT = 5000
MAX_WAIT = 20
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1

QUEUE_NAME_TEXT = (
    "Queue name must be a lowercase ASCII string between 1 and 255 characters in length. "
    "Allowed punctuation characters are -.:@_ and the queue name may not start with a single "
    "underscore character. An example of a valid table name would be 'polloi:provision'."
)
#: prefix of the store names backing /dedupq/1 queues; a /queue/1 name may not take it.
DEDUP_STORE_PREFIX = queue_names.DEDUPQ_PREFIX
_INT_RE = re.compile(r"[+-]?[0-9]+")
#: a decimal number as JSON and the contract write it (``2.5``, ``1e2``, ``1E-9``)
NUMBER_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: the shortest message ttl the store keeps (it counts in milliseconds)
MIN_TTL = 0.001
MOVE_REF_RE = re.compile(r"[A-Z2-7]{42}")


class EmoHttpError(Exception):
    """A finished EmoDB error response."""

    def __init__(self, status: int, body: str, content_type: str = "text/plain",
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(body)
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = dict(headers or {})


def illegal_argument(message: str) -> EmoHttpError:
    """400 text/plain with ``X-BV-Exception: java.lang.IllegalArgumentException``."""
    return EmoHttpError(400, message or "Invalid argument.", "text/plain", {"X-BV-Exception": IAE})


def bad_param(message: str) -> EmoHttpError:
    """400 text/plain without an exception header (Dropwizard parameter classes)."""
    return EmoHttpError(400, message, "text/plain")


def json_error(status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None,
               ) -> EmoHttpError:
    return EmoHttpError(status, json.dumps(payload, separators=(",", ":")), "application/json", headers)


def bad_json(message: str) -> EmoHttpError:
    """400 JSON ``{"message": ...}`` for a body that does not parse or has the wrong shape."""
    return json_error(400, {"message": message})


def empty_body() -> EmoHttpError:
    """422 ``{"errors":[...]}`` for an empty or ``null`` body."""
    return json_error(422, {"errors": ["the request body is empty or null: send a JSON value"]})


def not_authorized() -> EmoHttpError:
    return json_error(403, {"reason": "not authorized"}, {"X-BV-Exception": UNAUTHORIZED_EXC})


def unknown_move(ref: str) -> EmoHttpError:
    return json_error(404, {"id": ref, "message": f"Unknown move: {ref}", "suppressed": []},
                      {"X-BV-Exception": UNKNOWN_MOVE_EXC})


def unavailable(retry_after: int, reason: str | None = None) -> EmoHttpError:
    """503 with Dropwizard's body; ``reason`` (what the storage said: a full disk, no free inodes)
    follows the usual message."""
    message = "Service unavailable, try again later" + (f" ({reason})" if reason else "")
    body = {"message": message, "retryAfterSeconds": retry_after, "suppressed": []}
    return json_error(503, body, {"X-BV-Exception": UNAVAILABLE_EXC, "Retry-After": str(retry_after)})


def internal_error() -> tuple[EmoHttpError, str]:
    """500 with Dropwizard's body; returns the error and the log id to log it under."""
    log_id = secrets.token_hex(8)
    msg = f"There was an error processing your request. It has been logged (ID {log_id})."
    return json_error(500, {"message": msg}), log_id


# --- names -------------------------------------------------------------------------------


def is_legal_queue_name(name: str) -> bool:
    """EmoDB ``Names.isLegalQueueName`` (:func:`spoolq.queue_names.is_emodb_name`)."""
    return queue_names.is_emodb_name(name)


def check_queue_name(name: str, *, dedup: bool) -> str:
    """Validate a queue name and return the store queue name it maps to.

    A ``/queue/1`` name starting ``__dedupq:`` would alias a dedup queue's storage; it is
    refused with the same text (a documented deviation).
    """
    if not is_legal_queue_name(name) or (not dedup and name.startswith(DEDUP_STORE_PREFIX)):
        raise illegal_argument(QUEUE_NAME_TEXT)
    return DEDUP_STORE_PREFIX + name if dedup else name


# --- query parameters ----------------------------------------------------------------------


def parse_java_int(raw: str, maximum: int = JAVA_INT_MAX) -> int:
    """Parse like ``Integer.valueOf`` (or ``Long.valueOf`` with ``maximum=JAVA_LONG_MAX``)."""
    if not _INT_RE.fullmatch(raw):
        raise bad_param(f'"{raw}" is not a number.')
    value = int(raw)
    if not -maximum - 1 <= value <= maximum:
        raise bad_param(f'"{raw}" is not a number.')
    return value


def _given(args: Mapping[str, str], name: str) -> str | None:
    """``args.get(name)``, asked only for a name the query has: werkzeug's ``MultiDict.get`` of a
    missing name raises and catches a ``BadRequestKeyError`` (about 20 times the cost of the look)."""
    return args.get(name) if name in args else None


def int_param(args: Mapping[str, str], name: str, default: int | None,
              maximum: int = JAVA_INT_MAX) -> int | None:
    raw = _given(args, name)
    if raw is None:
        return default
    return parse_java_int(raw, maximum)


def bool_param(args: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = _given(args, name)
    if raw is None:
        return default
    low = raw.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    raise bad_param(f'"{raw}" must be "true" or "false".')


def float_param(args: Mapping[str, str], name: str, default: float | None) -> float | None:
    """Extension parameters (``delay``, ``ttl`` on send, ``wait``): a finite decimal number."""
    raw = _given(args, name)
    if raw is None:
        return default
    if not NUMBER_RE.fullmatch(raw):
        raise bad_param(f'"{raw}" is not a number.')
    value = float(raw)
    if not math.isfinite(value):
        raise bad_param(f'"{raw}" is not a number.')
    return value


# --- payload JSON --------------------------------------------------------------------------


class _Unsupported(ValueError):
    pass


def _parse_int(text: str) -> int:
    # An integer whose magnitude overflows a double is rejected like Jackson's JsonValidator.
    if len(text.lstrip("-")) > 309:
        raise _Unsupported(f"Unsupported JSON numeric type: {text}")
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise _Unsupported(f"Unsupported JSON numeric type: {text}") from None
    return value


class _Double(float):
    """A JSON double (as opposed to an integer), printed like Java's ``Double.toString``."""


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unsupported(f"Unsupported JSON numeric type: {'-' if value < 0 else ''}Infinity")
    return _Double(value)


def _parse_constant(text: str) -> Any:
    raise ValueError(f"Non-standard token '{text}'")


_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_int=_parse_int, parse_constant=_parse_constant)


def java_double(value: float) -> str:
    """Java ``Double.toString`` with the shortest round-trip digits."""
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    mag = abs(value)
    digits, exp = _shortest_digits(mag)
    if 1e-3 <= mag < 1e7:
        point = exp + 1  # position of the decimal point within digits
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
        return sign + text
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{exp}"


def _shortest_digits(mag: float) -> tuple[str, int]:
    """Digits (no leading/trailing zeros) and decimal exponent of the first digit."""
    # repr gives the shortest round-trip string; normalise it into digits + exponent.
    rep = repr(mag)
    if "e" in rep or "E" in rep:
        mant, _, e = rep.lower().partition("e")
        exp = int(e)
    else:
        mant, exp = rep, 0
    int_part, _, frac = mant.partition(".")
    all_digits = (int_part + frac).lstrip("0")
    lead_zeros = len(int_part + frac) - len((int_part + frac).lstrip("0"))
    exp = exp + len(int_part) - 1 - lead_zeros
    all_digits = all_digits.rstrip("0") or "0"
    return all_digits, exp


def _dump(value: Any, out: list[bytes]) -> None:
    if value is None:
        out.append(b"null")
    elif value is True:
        out.append(b"true")
    elif value is False:
        out.append(b"false")
    elif isinstance(value, str):
        try:  # the same bytes as json.dumps(value, ensure_ascii=False).encode(), written in C
            out.append(orjson.dumps(value))
        except orjson.JSONEncodeError:  # lone surrogates (not UTF-8) stay escaped
            out.append(json.dumps(value, ensure_ascii=True).encode("ascii"))
    elif isinstance(value, float):  # a _Double, or a float of the fast parse (never from an integer)
        out.append(java_double(value).encode("ascii"))
    elif isinstance(value, int):
        out.append(str(value).encode("ascii"))
    elif isinstance(value, list):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _dump(item, out)
        out.append(b"]")
    elif isinstance(value, dict):
        out.append(b"{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(b",")
            _dump(k, out)
            out.append(b":")
            _dump(v, out)
        out.append(b"}")
    else:  # pragma: no cover - the decoder produces nothing else
        raise TypeError(f"unexpected JSON value {type(value).__name__}")


def compact(value: Any) -> bytes:
    """The compact serialization EmoDB stores for ``value``."""
    if type(value) is str:  # the common payload: one string
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    out: list[bytes] = []
    _dump(value, out)
    return b"".join(out)


def parse_body(raw: bytes) -> Any:
    """Parse a request body into a JSON value.

    Raises 422 for an empty body or ``null``, 400 JSON for malformed JSON, and 400 text
    (IllegalArgumentException) for unsupported numbers.

    A document orjson reads (strict JSON in UTF-8, no BOM, no NaN, no number out of a double's
    range, nesting under 1,024) without floats is taken as orjson read it: that is the value the
    exact parse below gives it. Anything else, errors included, goes through the exact parse.
    """
    try:
        fast = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        if fast is not None and framing.holds_no_float(fast):
            return fast
    return parse_body_exactly(raw)


def parse_body_exactly(raw: bytes) -> Any:
    """:func:`parse_body` without its fast path: the reference it is tested against."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad_json(f"Invalid UTF-8 middle byte at position {e.start}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    stripped = text.strip(" \t\r\n")
    if not stripped:
        raise empty_body()
    try:
        value, end = _DECODER.raw_decode(stripped)
    except _Unsupported as e:
        raise illegal_argument(str(e)) from None
    except RecursionError:
        raise bad_json("Unexpected character: nesting too deep") from None
    except ValueError as e:
        raise bad_json(_jackson_like(e)) from None
    if end != len(stripped):
        raise bad_json(f"Unexpected character ('{stripped[end]}'): expected end-of-input at char {end}")
    if value is None:
        raise empty_body()
    return value


def _jackson_like(e: ValueError) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"Unexpected character: {e.msg} (line {e.lineno}, column {e.colno})"
    return f"Unexpected character: {e}"


def message_bytes(value: Any) -> bytes:
    """Compact bytes for one message, enforcing the 30720-byte limit."""
    try:
        data = compact(value)
    except RecursionError:
        raise bad_json("Unexpected character: nesting too deep") from None
    if len(data) > MAX_MESSAGE_BYTES:
        raise illegal_argument(
            f"Message size ({len(data)}) is greater than the maximum allowed ({MAX_MESSAGE_BYTES}) message size")
    return data


def message_list(value: Any) -> list[Any]:
    """A body bound to ``Collection<Object>`` (sendbatch)."""
    if not isinstance(value, list):
        raise bad_json(f"Can not deserialize instance of java.util.ArrayList out of {_token(value)} token")
    return value


def id_list(value: Any) -> list[str]:
    """A body bound to ``List<String>`` (ack, renew). Scalars are coerced to text like Jackson."""
    if not isinstance(value, list):
        raise bad_json(f"Can not deserialize instance of java.util.ArrayList out of {_token(value)} token")
    ids: list[str] = []
    for item in value:
        if isinstance(item, str):
            ids.append(item)
        elif isinstance(item, bool):
            ids.append("true" if item else "false")
        elif isinstance(item, (int, float)):
            ids.append(compact(item).decode())
        elif item is None:
            raise illegal_argument("Invalid event ID.")
        else:
            raise bad_json(f"Can not deserialize instance of java.lang.String out of {_token(item)} token")
    return ids


def batch_map(value: Any) -> dict[str, list[Any]]:
    """A body bound to ``Map<String, List<Object>>`` (_sendbatch)."""
    if not isinstance(value, dict):
        raise bad_json(f"Can not deserialize instance of java.util.LinkedHashMap out of {_token(value)} token")
    for key, item in value.items():
        if not isinstance(item, list):
            raise bad_json(f"Can not deserialize instance of java.util.ArrayList out of {_token(item)} token"
                           f" (through reference chain: java.util.LinkedHashMap[\"{key}\"])")
    return value


def _token(value: Any) -> str:
    if isinstance(value, dict):
        return "START_OBJECT"
    if isinstance(value, list):
        return "START_ARRAY"
    if isinstance(value, str):
        return "VALUE_STRING"
    if isinstance(value, bool):
        return "VALUE_TRUE" if value else "VALUE_FALSE"
    if isinstance(value, int):
        return "VALUE_NUMBER_INT"
    if isinstance(value, float):
        return "VALUE_NUMBER_FLOAT"
    return "VALUE_NULL"


def payload_json(body: bytes) -> bytes:
    """Bytes to embed as ``payload``: the stored JSON, or a JSON string for non-JSON bodies.

    Bodies written through this door are compact JSON already; a queue shared with another
    door (an ``mq:`` or SQS queue of the same name) may hold arbitrary bytes.
    """
    try:
        orjson.loads(body)  # strict JSON: what it accepts, json.loads accepts
        return body
    except orjson.JSONDecodeError:
        pass
    try:
        json.loads(body)
        return body
    except ValueError:
        return json.dumps(body.decode("utf-8", "replace"), ensure_ascii=False).encode("utf-8")


def render(exc: BaseException) -> tuple[EmoHttpError, str | None]:
    """The EmoDB rendering of any error; the second item is a log id for unexpected errors."""
    # Imported here so this module stays importable without the store package's extras.
    from werkzeug.exceptions import HTTPException, MethodNotAllowed, RequestEntityTooLarge

    from spoolq import errors

    if isinstance(exc, EmoHttpError):
        return exc, None
    if isinstance(exc, errors.MessageIdChecksumMismatch):
        return illegal_argument("Invalid event ID checksum."), None
    if isinstance(exc, errors.InvalidMessageId):
        return illegal_argument("Invalid event ID."), None
    if isinstance(exc, errors.InvalidQueueName):
        return illegal_argument(QUEUE_NAME_TEXT), None
    if isinstance(exc, errors.UnknownMove):
        return unknown_move(exc.ref), None
    if isinstance(exc, errors.StorageUnavailable):
        return unavailable(exc.retry_after, exc.message), None
    if isinstance(exc, errors.InvalidArgument):
        return illegal_argument(exc.message), None
    if isinstance(exc, errors.SpoolqError):
        return json_error(exc.http_status, {"message": exc.message}), None
    if isinstance(exc, RequestEntityTooLarge):
        return json_error(413, {"message": "HTTP 413 Request Entity Too Large"}), None
    if isinstance(exc, HTTPException):
        code = exc.code or 500
        headers = {}
        if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
            headers["Allow"] = ", ".join(exc.valid_methods)
        return json_error(code, {"message": f"HTTP {code} {exc.name}"}, headers), None
    err, log_id = internal_error()
    return err, log_id
