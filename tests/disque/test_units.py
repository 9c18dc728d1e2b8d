"""Fast unit tests above the store: job ids, argument parsing, the RESP reader's limits."""

from __future__ import annotations

import os

import pytest

from spoolq.disque import args as A
from spoolq.disque.protocol import Error, Status, encode
from spoolq.queues import job_ids as ids


def test_ids_round_trip_and_ttl_parity() -> None:
    for _ in range(200):
        sid = os.urandom(20).hex()
        for ttl in (1, 60, 3600, 86_400, 10**9):
            for amo in (False, True):
                did = ids.to_disque(sid, ttl, amo)
                assert len(did) == 48 and did.startswith("D-") and did[10] == "-" and did[43] == "-"
                assert ids.to_store(did) == sid
                assert int(did[-4:], 16) % 2 == (0 if amo else 1)
    assert ids.to_store("D-1234") is None
    assert ids.to_store("D-" + "g" * 8 + "-" + "0" * 32 + "-0001") is None


def test_node_prefix_matches_store_ids() -> None:
    from spoolq.store import layout as L

    sid = L.IdFactory("node-x").new_id("disque:q", 1_700_000_000_000)
    assert ids.to_disque(sid, 60, False)[2:10] == ids.node_prefix("node-x")


def test_addjob_defaults() -> None:
    job = A.parse_addjob([b"ADDJOB", b"q", b"body", b"0"])
    assert (job.queue, job.ttl, job.retry, job.delay, job.replicate) == ("disque:q", 86_400, 300, 0, 1)
    assert A.parse_addjob([b"ADDJOB", b"q", b"b", b"0", b"TTL", b"20"]).retry == 2
    assert A.parse_addjob([b"ADDJOB", b"q", b"b", b"0", b"TTL", b"5"]).retry == 1
    assert A.parse_addjob([b"addjob", b"q", b"b", b"0", b"retry", b"0", b"async"]).retry == 0


@pytest.mark.parametrize("bad", [b"01", b"+1", b" 1", b"1.0", b"", b"1e3", b"9" * 19])
def test_integers_are_strict(bad: bytes) -> None:
    with pytest.raises(Error):
        A.integer(bad)


def test_encode() -> None:
    out = bytearray()
    encode([b"a", 1, None, Status("OK"), Error("boom", "NOJOB"), []], out)
    assert bytes(out) == b"*6\r\n$1\r\na\r\n:1\r\n$-1\r\n+OK\r\n-NOJOB boom\r\n*0\r\n"
