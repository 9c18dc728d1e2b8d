"""The RESP request reader: Redis's limits, every declared length checked before anything is
allocated, and the same requests and errors however the stream is cut into chunks (hiredis's
fast path or the walker)."""

from __future__ import annotations

import itertools
import time
import tracemalloc
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spoolq.disque import reader as R
from spoolq.disque.reader import Limits, ProtocolError, RequestReader, Walker

AFTER = Limits.after_auth(20_000)
BEFORE = Limits.before_auth()


def frame(*args: bytes | str) -> bytes:
    out = b"*%d\r\n" % len(args)
    for a in args:
        data = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(data), data)
    return out


class Refused(Exception):
    pass


def reference(stream: bytes, limits: Limits) -> tuple[list[list[bytes]], str | None, bool]:
    """(requests, error, partial) of a whole stream: the grammar of :mod:`spoolq.disque.reader`,
    written plainly, independently of the reader."""
    requests: list[list[bytes]] = []
    end = len(stream)

    def line(pos: int, what: str) -> tuple[bytes, int] | None:
        nl = stream.find(b"\r\n", pos)
        if nl < 0 or nl - pos > R.MAX_HEADER_LINE - 2:
            if end - pos >= R.MAX_HEADER_LINE:
                raise Refused(f"too big {what} count string")
            return None
        return stream[pos:nl], nl + 2

    def number(digits: bytes, what: str, high: int) -> int:
        if not digits.isdigit() or (len(digits) > 1 and digits.startswith(b"0")):
            raise Refused(f"invalid {what} length")
        if int(digits) > high:
            raise Refused(f"invalid {what} length" if limits.authenticated else f"unauthenticated {what} length")
        return int(digits)

    pos = 0
    try:
        while pos < end:
            got = line(pos, "mbulk")
            if got is None:
                return requests, None, True
            head, p = got
            if head[:1] != b"*":
                raise Refused(f"expected '*', got '{chr(stream[pos])}'")
            count = number(head[1:], "multibulk", limits.max_args)
            size = p - pos
            args = []
            for _ in range(count):
                got = line(p, "bulk")
                if got is None:
                    return requests, None, True
                head, q = got
                if head[:1] != b"$":
                    raise Refused(f"expected '$', got '{chr(stream[p])}'")
                length = number(head[1:], "bulk", limits.max_bulk)
                size += q - p + length + 2
                if size > limits.max_request:
                    raise Refused("invalid bulk length (request over the size limit)")
                if q + length + 2 > end:
                    return requests, None, True
                if stream[q + length:q + length + 2] != b"\r\n":
                    raise Refused("expected CRLF after a bulk string")
                args.append(stream[q:q + length])
                p = q + length + 2
            if args:
                requests.append(args)
            pos = p
    except Refused as e:
        return requests, str(e), False
    return requests, None, False


def read_in_chunks(chunks: Sequence[bytes], limits: Limits) -> tuple[list[list[bytes]], str | None, bool]:
    reader = RequestReader(limits)
    got: list[object] = []
    for chunk in chunks:
        got += reader.feed(chunk)
        while reader.holding:  # the server answers what was read, then asks for more
            got += reader.release(limits)
    errors = [g for g in got if isinstance(g, ProtocolError)]
    assert len(errors) <= 1 and (not errors or got[-1] is errors[0]), got
    requests = [list(g) for g in got if not isinstance(g, ProtocolError)]  # type: ignore[call-overload]
    return requests, (str(errors[0]) if errors else None), reader.partial


NASTY_PAYLOADS = [b"", b"\r\n", b"*123\r\n", b"+OK", b"=5\r\ntxt:a", b"(12", b"$1000000", b"%1\r\n", b"x\r",
                  b"\n*", b"*", b"AUTH", b"-1"]
NASTY_PIECES = [b"*2147483647\r\n", b"*-1\r\n", b"*0\r\n", b"*1\r\n*1\r\n$1\r\na\r\n", b"+OK\r\n",
                b"*2\r\n$1\r\na\r\n+b\r\n", b"*1\r\n=7\r\ntxt:abc\r\n", b"*1\r\n(12\r\n", b"*1\r\n$04\r\nPING\r\n",
                b"*1\r\n$4\r\nPINGxx", b"*100\r\n", b"*11\r\n", b"*1\r\n$16385\r\n", b"*1\r\n$-1\r\n",
                b"*1\r\n$99999999999\r\n", b"\x00\xff", b"PING\r\n", b"*1\r\n%1\r\n$1\r\na\r\n$1\r\nb\r\n",
                b"*1\r\n>2147483647\r\n", b"~1\r\n$1\r\na\r\n", b"*" + b"9" * 40, b"*1\r\n$" + b"1" * 40,
                b"*001\r\n$1\r\na\r\n", b"*1\r\n*1\r\n" * 50]

arg = st.one_of(st.binary(max_size=30), st.sampled_from(NASTY_PAYLOADS),
                st.builds(lambda n: b"y" * n, st.sampled_from([16_384, 16_385, 19_900, 20_001])))
command = st.one_of(st.sampled_from([b"ADDJOB", b"PING", b"AUTH", b"GETJOB", b"hello", b"QLEN"]), arg)
request = st.builds(lambda c, rest: frame(c, *rest), command, st.lists(arg, max_size=12))
nasty = st.one_of(st.sampled_from(NASTY_PIECES), st.binary(min_size=1, max_size=40))


@st.composite
def chunked(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """Requests, at most one nasty piece among them, cut at request boundaries and anywhere."""
    pieces = draw(st.lists(request, min_size=1, max_size=10))
    if draw(st.booleans()):
        pieces.insert(draw(st.integers(0, len(pieces))), draw(nasty))
    stream = b"".join(pieces)
    boundaries = [sum(map(len, pieces[:i])) for i in range(1, len(pieces))]
    cuts = draw(st.lists(st.sampled_from(boundaries) if boundaries else st.just(0), max_size=4))
    cuts += draw(st.lists(st.integers(0, len(stream)), max_size=4))
    bounds = sorted({0, *cuts, len(stream)})
    return stream, [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chunked(), st.sampled_from([AFTER, BEFORE]))
def test_any_chunking_reads_as_the_grammar_says(case: tuple[bytes, list[bytes]], limits: Limits) -> None:
    stream, chunks = case
    expected = reference(stream, limits)
    assert read_in_chunks(chunks, limits) == expected
    assert read_in_chunks([stream], limits) == expected
    step = 1 if len(stream) < 4_000 else 331  # every byte apart, or many small chunks
    assert read_in_chunks([stream[i:i + step] for i in range(0, len(stream), step)], limits) == expected


TRICKY = [frame("PING", "*123"), frame("ADDJOB", "q", "a\r\n*999\r\n$1000000\r\n", "0"),
          frame("ADDJOB", "q", "=5\r\ntxt:a", "0"), frame("QLEN", "+OK\r\n")]


@pytest.mark.parametrize("limits", [AFTER, BEFORE])
@pytest.mark.parametrize("piece", NASTY_PIECES)
def test_each_nasty_piece_among_requests(piece: bytes, limits: Limits) -> None:
    for stream in (piece, frame("PING") + piece, piece + frame("PING"), frame("PING") + piece + frame("PING")):
        assert read_in_chunks([stream], limits) == reference(stream, limits), stream


@pytest.mark.parametrize("limits", [AFTER, BEFORE])
@pytest.mark.parametrize("stream", TRICKY)
def test_every_cut_of_tricky_requests(stream: bytes, limits: Limits) -> None:
    stream = frame("PING") + stream + frame("ADDJOB", "q", "*1000\r\n", "0")
    expected = reference(stream, limits)
    for i in range(1, len(stream)):
        for j in range(i + 1, len(stream), 7):
            assert read_in_chunks([stream[:i], stream[i:j], stream[j:]], limits) == expected, (i, j)


def test_whole_pipelines_are_read_by_hiredis(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is the one taken for an authenticated client's whole requests of bulk strings."""
    chunk = b"".join(frame("ADDJOB", "q", "x" * 100, "0") for _ in range(16)) + frame("ACKJOB", *["D-1"] * 16)

    def walked(*_a: object, **_k: object) -> int:
        raise AssertionError("the walker read a chunk hiredis could read")
    reader = RequestReader(AFTER)
    monkeypatch.setattr(Walker, "walk", walked)
    got = reader.feed(chunk)
    assert len(got) == 17 and got[0] == [b"ADDJOB", b"q", b"x" * 100, b"0"]


@pytest.mark.parametrize(("limits", "data", "error"), [
    (BEFORE, b"*2147483647\r\n", "unauthenticated multibulk length"),
    (AFTER, b"*2147483647\r\n", "invalid multibulk length"),
    (BEFORE, b"*11\r\n", "unauthenticated multibulk length"),
    (BEFORE, b"*1\r\n$16385\r\n", "unauthenticated bulk length"),
    (AFTER, b"*1\r\n$20001\r\n", "invalid bulk length"),
    (AFTER, b"*1\r\n*2147483647\r\n", "expected '$', got '*'"),
    (AFTER, b"*2\r\n$1\r\na\r\n>2147483647\r\n", "expected '$', got '>'"),
    (AFTER, b"*3\r\n$6\r\nADDJOB\r\n$1\r\nq\r\n$99999999999\r\n", "invalid bulk length"),
])
def test_declared_lengths_are_refused_at_their_header(limits: Limits, data: bytes, error: str) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    got = RequestReader(limits).feed(data)
    took = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(got) == 1 and isinstance(got[0], ProtocolError) and str(got[0]) == error
    assert took < 0.05 and peak < 1_000_000, (took, peak)


def test_a_pipelined_auth_is_answered_before_the_next_request_is_read() -> None:
    big = frame("ADDJOB", "q", "z" * 40_000, "0")
    reader = RequestReader(BEFORE)
    got = reader.feed(frame("AUTH", "key") + big[:100])
    assert got == [[b"AUTH", b"key"]] and reader.holding
    assert reader.feed(big[100:]) == []
    assert reader.release(Limits.after_auth(70_000)) == [[b"ADDJOB", b"q", b"z" * 40_000, b"0"]]
    refused = RequestReader(BEFORE)
    refused.feed(frame("AUTH", "wrong") + big)
    [error] = refused.release(BEFORE)  # a failed AUTH: the small limits still apply
    assert str(error) == "unauthenticated bulk length"


def test_partial_and_abandoned() -> None:
    reader = RequestReader(AFTER)
    assert reader.feed(b"*2\r\n$4\r\nQLEN\r\n$1") == [] and reader.partial
    assert reader.feed(b"\r\nq\r\n*1\r\n$4\r\nPI") == [[b"QLEN", b"q"]] and reader.partial
    reader.abandon()
    assert not reader.partial and reader.feed(b"NG\r\n") == []


@pytest.mark.parametrize("limits", [AFTER, BEFORE])
def test_the_walker_reads_a_flood_one_batch_at_a_time(limits: Limits) -> None:
    flood = frame("PING") * 200 + frame("QLEN", "a\r\nb")  # a CRLF in a payload: the walker's
    reader = RequestReader(limits)
    got = reader.feed(flood)
    batches = [len(got)]
    while reader.holding:
        more = reader.release(limits)
        batches.append(len(more))
        got += more
    assert got == [[b"PING"]] * 200 + [[b"QLEN", b"a\r\nb"]]
    assert max(batches) == R.WALK_BATCH
