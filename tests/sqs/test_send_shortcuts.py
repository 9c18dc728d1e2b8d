"""The SQS door's shortcuts on the send path give what the general way gives: a body checked and
encoded by ``checks.encoded_body`` (a byte deletion for ASCII bodies) as by the pattern of
``checks.check_body`` and ``str.encode``; MessageIds and request ids as ``uuid.UUID(..., version=4)``
makes them; replies of sends, receives and deletes by orjson as by ``json.dumps``; a message that
gives nothing optional as ``_prepare``'s general path prepares it; on the receive path, receipt
handles as ``base64.urlsafe_b64*`` make and read them and a body's MD5 as the decoded text gives it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import uuid

import pytest

from spoolq.http.sqs import checks, context, messages, wire
from spoolq.http.sqs.errors import ReceiptHandleIsInvalid, SqsError
from spoolq.http.sqs.messages import message_id
from spoolq.store.model import Delivery, Message, QueueConfig, QueueInfo, QueueKind


def _general(body: str) -> tuple[str, object]:
    try:
        checks.check_body(body)
    except SqsError as e:
        return ("refused", type(e).__name__, e.message)
    return ("ok", body.encode("utf-8"))


def _shortcut(body: str) -> tuple[str, object]:
    try:
        return ("ok", checks.encoded_body(body))
    except SqsError as e:
        return ("refused", type(e).__name__, e.message)


#: every character of Latin-1 (the shortcut's own ground is ASCII) and the edges of every range
#: check_body allows or refuses beyond it
CODES = [*range(0x100), 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000,
         0x10FFFF, *range(0x100, 0x110000, 997)]


def test_every_character_alone_and_inside_a_body() -> None:
    for code in CODES:
        c = chr(code)
        for body in (c, "ab" + c + "\t", "\n" + c * 3):
            assert _shortcut(body) == _general(body), hex(code)


@pytest.mark.parametrize("seed", range(5))
def test_random_bodies(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [chr(c) for c in range(0x80)] + ["\u00e9", "\ud800", "\ufffe", "\U0001f600", "\ue000"]
    for _ in range(2000):
        n = rng.choice([1, 2, 10, 300])
        body = "".join(rng.choice(alphabet) if rng.random() < 0.05 else "x" for _ in range(n))
        assert _shortcut(body) == _general(body), body


def test_the_first_bad_character_is_the_one_named() -> None:
    body = "ok\x7f" + "x" * 100 + "\x01" + "y" * 50 + "\x02"
    assert _shortcut(body) == _general(body)
    assert "#x1'" in str(_shortcut(body)[2])


def _message_id_the_general_way(store_id: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(store_id[:36].encode("ascii")).digest()[:16], version=4))


def test_message_ids_as_uuid_makes_them() -> None:
    rng = random.Random(7)
    for _ in range(20_000):
        store_id = f"{rng.getrandbits(160):040x}"
        assert message_id(store_id) == _message_id_the_general_way(store_id)
    assert message_id("0" * 40) == _message_id_the_general_way("0" * 40)
    assert message_id("f" * 40) == _message_id_the_general_way("f" * 40)


def test_uuids_from_hex_digits_and_request_ids_as_uuid_makes_them() -> None:
    rng = random.Random(11)
    for raw in [bytes(16), b"\xff" * 16, *(rng.randbytes(16) for _ in range(20_000))]:
        assert wire.uuid4_text(raw.hex()) == str(uuid.UUID(bytes=raw, version=4))
    ids = {wire.new_request_id() for _ in range(1000)}
    assert len(ids) == 1000
    for request_id in ids:
        parsed = uuid.UUID(request_id)
        assert str(parsed) == request_id and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def _reply_the_general_way(result: dict[str, object]) -> bytes:
    return json.dumps(result, separators=(",", ":")).encode()


def test_send_and_receive_replies_written_as_the_json_encoder_writes_them() -> None:
    rng = random.Random(3)
    alphabet = [chr(c) for c in range(0x80)] + ["\u00e9", "\u2603", "\U0001f600", "\ud800"]
    for _ in range(3000):
        def text() -> str:
            return "".join(rng.choice(alphabet) if rng.random() < 0.1 else "x" for _ in range(rng.choice([0, 1, 8])))
        entries = [{"Id": text(), "MessageId": text(), "MD5OfMessageBody": text()} for _ in range(rng.choice([0, 1, 3]))]
        failed = [{"Id": text(), "SenderFault": rng.random() < 0.5, "Code": text(), "Message": text()}
                  for _ in range(rng.choice([0, 2]))]
        messages = [{"MessageId": text(), "ReceiptHandle": text(), "MD5OfBody": text(), "Body": text(),
                     "Attributes": {"SentTimestamp": text(), "ApproximateReceiveCount": "1"},
                     "MessageAttributes": {text(): {"DataType": "String", "StringValue": text()}}}
                    for _ in range(rng.choice([0, 1, 3]))]
        for action, result in [("SendMessageBatch", {"Successful": entries, "Failed": failed}),
                               ("ReceiveMessage", {"Messages": messages}),
                               ("DeleteMessageBatch", {"Successful": [{"Id": text()}], "Failed": failed}),
                               ("DeleteMessage", {}),
                               ("SendMessage", {"MD5OfMessageBody": text(), "MessageId": text(), "n": rng.randint(-9, 9)}),
                               ("SendMessage", {"big": 2**70, "small": -(2**70)}),
                               ("SendMessage", {1: "a key that is not a string"}),
                               ("GetQueueAttributes", {"f": 1e16, "g": 0.1})]:
            assert wire.reply_json(action, result) == _reply_the_general_way(result)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", [QueueKind.STANDARD, QueueKind.FIFO])
@pytest.mark.parametrize("trace", [{}, {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}}])
@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("body", ["x" * 1000, "caf\u00e9 \u2603", "\t\n\r ok"])
def test_a_message_with_nothing_optional_prepared_as_the_general_path_prepares_it(
        kind: QueueKind, trace: dict[str, dict[str, str]], batch: bool, body: str) -> None:
    """An entry of only its id (or queue URL) and body takes ``_prepare``'s shortcut; the same entry
    with a key SQS does not know takes the general path, which ignores that key."""
    info = QueueInfo("q", kind, QueueConfig(), {}, 0, 0)
    plain = {"sender": "AIDAEXAMPLE", "src": "q"}
    required = {"Id": "e1", "MessageBody": body} if batch else {"QueueUrl": "http://h/1/q", "MessageBody": body}
    attrs: dict[str, dict[str, str]] | None = {} if batch else None
    quick = messages._prepare(None, info, required, trace, plain, attrs, 0, batch)  # type: ignore[arg-type]
    general = messages._prepare(None, info, {**required, "Unknown": 1}, trace, plain, attrs, 0,  # type: ignore[arg-type]
                                batch)
    assert quick == general


def _wrap_the_general_way(queue: str, receipt: str, received_at: float) -> str:
    return base64.urlsafe_b64encode(f"{queue}\n{int(received_at * 1000)}\n{receipt}".encode()).decode("ascii")


def _unwrap_the_general_way(queue: str, handle: str) -> tuple[str, object]:
    try:
        raw = base64.urlsafe_b64decode(handle.encode("ascii")).decode("utf-8")
        owner, received_ms, receipt = raw.split("\n", 2)
        received_at = int(received_ms) / 1000.0
    except (ValueError, UnicodeError, binascii.Error):
        return ("invalid", None)
    return ("ok", (receipt, received_at)) if owner == queue and receipt else ("invalid", None)


def _unwrap(queue: str, handle: str) -> tuple[str, object]:
    try:
        return ("ok", context.unwrap_receipt(queue, handle))
    except ReceiptHandleIsInvalid:
        return ("invalid", None)


def test_receipt_handles_made_and_read_as_base64_makes_and_reads_them() -> None:
    """Handles written and read by binascii directly, as ``base64.urlsafe_b64*`` do: handles of
    every length, and what clients send that is no handle (other alphabets, padding, spaces, bytes
    beyond ASCII, another queue's)."""
    rng = random.Random(13)
    queue = "sqs:123456789012:us-east-1:q\u00e9"
    for _ in range(3000):
        receipt = "".join(rng.choice("0123456789abcdef~:\n\u00e9") for _ in range(rng.randrange(0, 90)))
        received_at = rng.uniform(0, 2e9)
        handle = context.wrap_receipt(queue, receipt, received_at)
        assert handle == _wrap_the_general_way(queue, receipt, received_at)
        assert _unwrap(queue, handle) == _unwrap_the_general_way(queue, handle)
        spoiled = list(handle)
        for _ in range(rng.randrange(1, 4)):
            spoiled.insert(rng.randrange(len(spoiled) + 1), rng.choice("+/-_= \n.*\u00e9A"))
        for other in ("".join(spoiled), handle[:rng.randrange(len(handle) + 1)], handle.rstrip("=")):
            assert _unwrap(queue, other) == _unwrap_the_general_way(queue, other), other
            assert _unwrap("sqs:1:r:other", other) == _unwrap_the_general_way("sqs:1:r:other", other)


@pytest.mark.parametrize("body", [b"x" * 1000, "caf\u00e9 \u2603 \U0001f600".encode(), b"", b"\xff\xfe bytes",
                                  b"ok \xed\xa0\x80 surrogate", b"cut \xe2\x98"])
def test_a_received_body_and_its_md5_as_the_decoded_text_gives_them(body: bytes) -> None:
    """The digest of the stored bytes where they are UTF-8; of the text the client reads (invalid
    bytes replaced) where another door stored bytes that are not."""
    info = QueueInfo("q", QueueKind.STANDARD, QueueConfig(), {}, 0, 0)
    message = Message("0" * 40, body, 1.0, 1, None, {}, None, None, None)
    out = messages._render_delivery(None, info, Delivery(message, "0:r", 2.0), set(), [], 1.5)  # type: ignore[arg-type]
    text = body.decode("utf-8", errors="replace")
    assert out["Body"] == text
    assert out["MD5OfBody"] == hashlib.md5(text.encode("utf-8")).hexdigest()
