"""EmoDB wire details: payload re-serialization, Java number parsing and printing, id lists."""

from __future__ import annotations

import pytest

from spoolq.http import emodb_wire as wire


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1.0"), (100.0, "100.0"), (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (1.5e-5, "1.5E-5"), (123.456, "123.456"), (-0.0, "-0.0"), (0.0, "0.0"),
    (1e-300, "1.0E-300"), (1.7976931348623157e308, "1.7976931348623157E308"), (12345678.9, "1.23456789E7"),
    (-2.5, "-2.5"), (0.1, "0.1"),
])
def test_java_double(value: float, text: str) -> None:
    assert wire.java_double(value) == text


@pytest.mark.parametrize(("raw", "stored"), [
    (b' { "a" : 1 , "b" : [ 1e2 , 1.0 , null , true ] } ', b'{"a":1,"b":[100.0,1.0,null,true]}'),
    (b'{"b":2,"a":1}', b'{"b":2,"a":1}'),
    (b"123456789012345678901234567890", b"123456789012345678901234567890"),
    (b'"caf\\u00e9 \\n"', '"café \\n"'.encode()),
    (b'{"a":1,"a":2}', b'{"a":2}'),
    (b"-0", b"0"),
    (b"\xef\xbb\xbf[1]", b"[1]"),
])
def test_compact_reserialization(raw: bytes, stored: bytes) -> None:
    assert wire.message_bytes(wire.parse_body(raw)) == stored


@pytest.mark.parametrize(("raw", "status"), [
    (b"", 422), (b"  \n", 422), (b"null", 422), (b"{", 400), (b"NaN", 400), (b"Infinity", 400),
    (b"1e400", 400), (b"-1e400", 400), (b"1" + b"0" * 400, 400), (b"[1] x", 400), (b"\xff", 400),
    (b"[" * 100_000, 400),
])
def test_rejected_bodies(raw: bytes, status: int) -> None:
    with pytest.raises(wire.EmoHttpError) as e:
        wire.parse_body(raw)
    assert e.value.status == status


def test_unsupported_number_text() -> None:
    with pytest.raises(wire.EmoHttpError) as e:
        wire.parse_body(b"1e400")
    assert e.value.body == "Unsupported JSON numeric type: Infinity"
    assert e.value.headers["X-BV-Exception"] == wire.IAE


@pytest.mark.parametrize(("raw", "ok"), [("0", True), ("+5", True), ("-5", True), ("2147483647", True),
                                         ("2147483648", False), (" 5", False), ("5.0", False), ("1_0", False),
                                         ("", False), ("٣", False)])
def test_java_int(raw: str, ok: bool) -> None:
    if ok:
        assert wire.parse_java_int(raw) == int(raw)
    else:
        with pytest.raises(wire.EmoHttpError) as e:
            wire.parse_java_int(raw)
        assert e.value.body == f'"{raw}" is not a number.'


def test_queue_names() -> None:
    assert wire.is_legal_queue_name("__x") and wire.is_legal_queue_name("...") and wire.is_legal_queue_name("a" * 255)
    for bad in ("", ".", "..", "_x", "A", "a b", "é", "a" * 256, "a/b"):
        assert not wire.is_legal_queue_name(bad)
    assert wire.check_queue_name("x", dedup=True) == "__dedupq:x"
    with pytest.raises(wire.EmoHttpError):
        wire.check_queue_name("__dedupq:x", dedup=False)


def test_id_list_coerces_scalars() -> None:
    assert wire.id_list([1, True, "a"]) == ["1", "true", "a"]
    with pytest.raises(wire.EmoHttpError):
        wire.id_list([{"a": 1}])


def test_payload_json_for_foreign_bodies() -> None:
    assert wire.payload_json(b'{"a":1}') == b'{"a":1}'
    assert wire.payload_json(b"plain text") == b'"plain text"'
