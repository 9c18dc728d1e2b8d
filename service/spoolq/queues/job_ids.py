"""Disque-shaped job ids, one-to-one with store message ids (the Disque door's, read by the console too).

A store id is 40 hex digits: 12 of milliseconds, 8 of node hash, 20 of counter, random and
queue checksum (see :mod:`spoolq.store.layout`). The Disque id rearranges it::

    D-<node: 8 hex>-<ms 12 hex + counter/random/checksum 20 hex>-<ttl: 4 hex>
    D-1f2e3d4c-0190a1b2c3d40000000a5e5e5e5e1234-05a1          (48 characters)

Like Disque's: the prefix ``D-``, the node part first (the same 8 hex digits that open the
node id ``HELLO`` reports), and the job's TTL in minutes last, odd for at-least-once jobs and
even for at-most-once jobs (RETRY 0). The middle part carries the rest of the store id, so
the id is 48 characters instead of Disque's 40. The TTL field is informational: parsing
ignores it, so a job has exactly one store id and the door produces exactly one Disque id
for it.
"""

from __future__ import annotations

import re
import zlib

DISQUE_ID_RE = re.compile(r"^D-([0-9a-f]{8})-([0-9a-f]{32})-([0-9a-f]{4})$")


def node_prefix(node_id: str) -> str:
    """The 8 hex digits of ``node_id`` that store ids carry (the store's crc32 node hash)."""
    return f"{zlib.crc32(node_id.encode()):08x}"


def ttl_field(ttl_seconds: float, at_most_once: bool) -> str:
    minutes = max(0, min(0xFFFF, int(ttl_seconds // 60)))
    if (minutes & 1) == at_most_once:  # odd: at-least-once, even: at-most-once
        minutes = minutes + 1 if minutes < 0xFFFF else minutes - 1
    return f"{minutes:04x}"


def to_disque(store_id: str, ttl_seconds: float, at_most_once: bool) -> str:
    return f"D-{store_id[12:20]}-{store_id[:12]}{store_id[20:]}-{ttl_field(ttl_seconds, at_most_once)}"


def to_store(job_id: str) -> str | None:
    """The store id of a Disque job id, or None if ``job_id`` is not one."""
    m = DISQUE_ID_RE.fullmatch(job_id)
    if m is None:
        return None
    node, rest = m.group(1), m.group(2)
    return rest[:12] + node + rest[12:]
