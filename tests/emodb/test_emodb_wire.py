"""EmoDB wire details: payload re-serialization, Java number parsing and printing, id lists."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spoolq.http.emodb import wire


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


# --- the fast parse (orjson) against the exact one ------------------------------------------

_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(),
    st.sampled_from(["\ud800", "a\udfffb", "\x00\x1f\x7f", "\u2028\u2029", "\U0001f600", "\\", '"']),
)
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=12)


def _outcome(parse: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", wire.message_bytes(parse(raw))
    except wire.EmoHttpError as e:
        return "error", (e.status, e.body, e.headers)


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.sampled_from([(",", ":"), (", ", ": ")]), st.booleans(), st.sampled_from(["", " ", "\n\t"]))
def test_fast_parse_stores_what_the_exact_parse_stores(value: Any, separators: tuple[str, str],
                                                       ascii_only: bool, pad: str) -> None:
    """Whatever a body holds (integers past 64 bits, floats, escapes, lone surrogates, padding),
    the bytes stored and the errors answered are those of the exact parse."""
    raw = (pad + json.dumps(value, separators=separators, ensure_ascii=ascii_only) + pad).encode(
        "utf-8", "surrogatepass")
    assert _outcome(wire.parse_body, raw) == _outcome(wire.parse_body_exactly, raw)


@pytest.mark.parametrize("raw", [
    b"18446744073709551616", b"-9223372036854775809", b"[1, 18446744073709551615, 1e2]", b'{"a": 1.0E10}',
    b"1e-400", b'"\\ud800"', b'"\\ud83d\\ude00"', b"\xef\xbb\xbf\"x\"", b"[1,]", b"[01]", b'"\x01"',
    b"[" * 2000 + b"]" * 2000, b'{"a":null,"b":[null]}', b"null", b" ", b"true", b'"' + "é".encode() * 40 + b'"',
])
def test_fast_parse_edges(raw: bytes) -> None:
    assert _outcome(wire.parse_body, raw) == _outcome(wire.parse_body_exactly, raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | _VALUES.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")))
def test_payload_json_takes_what_json_takes(body: bytes) -> None:
    try:
        json.loads(body)
        expected = body
    except ValueError:
        expected = json.dumps(body.decode("utf-8", "replace"), ensure_ascii=False).encode("utf-8")
    assert wire.payload_json(body) == expected
