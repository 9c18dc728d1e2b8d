"""The send path's shortcuts give what its general path gives.

* Ids, made one at a time (``IdFactory.new_id``) or for a batch under one taking of the lock
  (``new_ids``), are the ids ``layout.py`` describes: 6 bytes of milliseconds, the node's hash, a
  counter that goes up by one per id, 4 random bytes, the queue's checksum of those 18 bytes.
* A message that carries a door's attributes and nothing else (an SQS message) is checked by
  ``_check``'s shortcut into the same metadata, bytes and due time as by the general path, and
  refused with the same error.
* A message file's meta is read on the receive path by orjson where that gives ``json.loads``'s
  value, and by ``json.loads`` elsewhere.
"""

from __future__ import annotations

import json
import os
import random
import zlib
from typing import Any

import pytest

from spoolq.errors import SpoolqError
from spoolq.store import codec
from spoolq.store import layout as L
from spoolq.store.message_rules import Encoded
from spoolq.store.message_rules import check as _check
from spoolq.store.message_rules import check_all as _check_all
from spoolq.store.model import (
    OutgoingMessage,
    QueueConfig,
    QueueInfo,
    QueueKind,
    check_message_id,
    id_checksum,
)

MS = 1_764_300_000_123


def _reference_id(queue: str, ms: int, node_id: str, counter: int, random: bytes) -> str:
    """An id as layout.py describes it, made the plain way."""
    head = ms.to_bytes(6, "big") + zlib.crc32(node_id.encode()).to_bytes(4, "big") + counter.to_bytes(4, "big") \
        + random
    return (head + id_checksum(head, queue).to_bytes(2, "big")).hex()


def _counter_of(message_id: str) -> int:
    return int(message_id[20:28], 16)


def _as_described(ids: list[str], queue: str, ms: int, node_id: str) -> None:
    for i, mid in enumerate(ids):
        assert mid == _reference_id(queue, ms, node_id, _counter_of(mid), bytes.fromhex(mid[28:36]))
        assert check_message_id(mid, queue) == mid and L.id_time_ms(mid) == ms
        if i:
            assert _counter_of(mid) == (_counter_of(ids[i - 1]) + 1) & 0xFFFFFFFF


@pytest.mark.parametrize("queue", ["q", "sqs:123456789012:caf.fifo", "x" * 400])
def test_ids_one_at_a_time_and_in_batches_are_as_described(queue: str) -> None:
    ids = L.IdFactory("node-a")
    made = [ids.new_id(queue, MS), *ids.new_ids(queue, MS, 10), ids.new_id(queue, MS), *ids.new_ids(queue, MS, 1)]
    _as_described(made, queue, MS, "node-a")
    assert len(set(made)) == len(made) == 13
    assert len({m[28:36] for m in made}) > 10  # random words, not one repeated
    later = ids.new_ids(queue, MS + 1, 3)
    _as_described(later, queue, MS + 1, "node-a")
    assert made == sorted(made) and later[0] > made[-1]


def test_ids_across_the_counter_wrap_and_a_pool_refill() -> None:
    ids = L.IdFactory("n")
    ids.new_id("q", MS)
    ids._counter = 0xFFFFFFFE
    ids._used = len(ids._random) - 2  # two random words left: the batch draws a new pool
    made = ids.new_ids("q", MS, 5)
    assert [_counter_of(m) for m in made] == [0xFFFFFFFF, 0, 1, 2, 3]
    _as_described(made, "q", MS, "n")
    big = ids.new_ids("q", MS, 3000)  # more than one pool's worth at once
    assert len(set(big)) == 3000
    _as_described(big, "q", MS, "n")


def test_a_forked_child_draws_its_own_counter_and_random_words() -> None:
    ids = L.IdFactory("n")
    ids.new_id("q", MS)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, (ids.new_id("q", MS) + ids.new_ids("q", MS, 2)[1]).encode())
        finally:
            os._exit(0)
    os.close(write)
    theirs = os.read(read, 200).decode()
    os.close(read)
    os.waitpid(child, 0)
    ours = ids.new_id("q", MS)
    assert theirs[:40] != ours and _counter_of(theirs[:40]) != _counter_of(ours)
    assert theirs[28:36] != ours[28:36]


class _General(OutgoingMessage):
    """The same message, of a type ``_check``'s shortcuts leave to the general path."""


ATTRIBUTES: list[dict[str, Any]] = [
    {"sender": "AIDAEXAMPLE", "src": "sqs:123456789012:q"},
    {"sender": "x", "src": "q", "ma": {"caf\u00e9": {"DataType": "String", "StringValue": "\u2603 \"quoted\"\n"}},
     "sa": {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5759e988"}}},
    {"z": 1, "a": [1.5, None, True], "m": {"t": 3}},
    {"t": 7},  # what a plain message's metadata looks like, as an attribute
    {"n": float("nan")},  # json writes NaN
    {"bad": object()},  # not JSON: refused
    {"bad": {1, 2}},
    {3: "a key json turns into a string"},
]
INFOS = [
    QueueInfo("q", QueueKind.STANDARD, QueueConfig(), {}, 0, 0),
    QueueInfo("q", QueueKind.STANDARD, QueueConfig(delay=2.5, max_message_bytes=1000), {}, 0, 0),
    QueueInfo("q", QueueKind.DEDUP, QueueConfig(), {}, 0, 0),
]


def _checked(info: QueueInfo, m: OutgoingMessage, encoded: Encoded | None) -> tuple[Any, ...]:
    try:
        p = _check(info, m, MS, encoded)
    except SpoolqError as e:
        return ("refused", type(e).__name__, str(e))
    return (p.meta, p.due_ms, p.meta_bytes, p.message is m)


@pytest.mark.parametrize("info", INFOS)
@pytest.mark.parametrize("attributes", ATTRIBUTES)
@pytest.mark.parametrize("body, extra", [(b"x" * 100, 0), (b"x" * 100, 37), (b"x" * 990, 11), (b"", 0)])
@pytest.mark.parametrize("encoded", [False, True])
def test_attributes_only_checked_as_the_general_path_checks(info: QueueInfo, attributes: dict[str, Any],
                                                            body: bytes, extra: int, encoded: bool) -> None:
    quick = OutgoingMessage(body=body, attributes=attributes, extra_bytes=extra)
    general = _General(body=body, attributes=attributes, extra_bytes=extra)
    cache = Encoded(MS) if encoded else None
    assert _checked(info, quick, cache) == _checked(info, general, cache)
    if encoded:  # the second message of a batch with the same attributes object: from the cache
        assert _checked(info, quick, cache) == _checked(info, general, Encoded(MS))


def test_a_batch_sharing_one_attributes_object_is_checked_as_the_general_path_checks() -> None:
    shared = {"sender": "s", "src": "q"}
    messages = [OutgoingMessage(body=b"m%d" % i, attributes=shared, extra_bytes=i) for i in range(5)]
    general = [_General(body=m.body, attributes=shared, extra_bytes=m.extra_bytes) for m in messages]
    for each in (False, True):
        quick_ones = _check_all(INFOS[0], messages, MS, each)
        general_ones = _check_all(INFOS[0], general, MS, each)
        assert [(p.meta, p.due_ms, p.meta_bytes) for p in quick_ones] \
            == [(p.meta, p.due_ms, p.meta_bytes) for p in general_ones]  # type: ignore[union-attr]


def _meta_the_general_way(meta_bytes: bytes) -> tuple[str, object]:
    try:
        return ("ok", json.loads(meta_bytes))
    except ValueError as e:
        return ("refused", type(e).__name__)


def _meta_the_short_way(meta_bytes: bytes) -> tuple[str, object]:
    try:
        return ("ok", codec.load_meta(meta_bytes))
    except ValueError as e:
        return ("refused", type(e).__name__)


def _same(a: object, b: object) -> bool:
    """Equal values of equal types all the way down (1 == 1.0 == True is not enough; NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def test_message_meta_read_on_the_receive_path_as_json_reads_it() -> None:
    """Meta as the store writes it (``json.dumps`` of attributes from every door), and what a file
    from an older or damaged writer could hold: orjson's value is taken only where it is json's."""
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(0x80)] + ["\u00e9", "\u2603", "\U0001f600", "\ud800"]

    def value(depth: int) -> Any:
        pick = rng.randrange(9 if depth < 3 else 6)
        if pick == 0:
            return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 3, 20])))
        if pick == 1:
            return rng.choice([0, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**70, rng.getrandbits(40)])
        if pick == 2:
            return rng.choice([0.1, 1e16, -0.0, 1e308, 5e-324, float("nan"), float("inf"), 1.0])
        if pick == 3:
            return rng.choice([True, False, None])
        if pick in (4, 5):
            return "sender-" + str(rng.getrandbits(30))
        if pick in (6, 7):
            return {"".join(rng.choice(alphabet) for _ in range(3)): value(depth + 1) for _ in range(rng.randrange(4))}
        return [value(depth + 1) for _ in range(rng.randrange(4))]

    samples = [b'{"a":{"sender":"AIDAEXAMPLE","src":"sqs:1:r:q"},"t":1700000000000}', b'{"t":1}', b"[]",
               b'{"a":1,"a":2}', b'{"t":1e400}', b'{"t":NaN}', b'{"x":"\\ud800"}', b"{", b"", b'{"t":1} x',
               b'\xef\xbb\xbf{"t":1}', b'{"t":"\xff"}']
    for _ in range(5000):
        meta = {"t": rng.getrandbits(41), "a": value(0)}
        if rng.random() < 0.3:
            meta["g"] = value(2)
        samples.append(json.dumps(meta, separators=(",", ":"), sort_keys=True).encode())
    for meta_bytes in samples:
        short, general = _meta_the_short_way(meta_bytes), _meta_the_general_way(meta_bytes)
        assert short[0] == general[0] and _same(short[1], general[1]), meta_bytes
