"""Batch claims on the EmoDB doors (spoolq extension): ``claimbatch``, ``renewbatches``, ``ackbatches``.

The views of :mod:`spoolq.store.batches` for ``/queue/1`` and ``/dedupq/1``, in the door's manner:
permission first (``poll``), then the query parameters in declaration order (400 text), then
the body, then one call into :class:`~spoolq.store.batches.BatchClaims`. The EmoDB door's
:class:`~spoolq.http.emodb.door.EmoDoor` routes to them and hands itself in; this module needs only
the few door helpers :class:`BatchDoor` names, and imports nothing from the door.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from flask import request

from spoolq.auth import Principal
from spoolq.http.context import Services
from spoolq.http.emodb import wire
from spoolq.http.framing import Response
from spoolq.store.model import MAX_BATCH_CLAIM, Message


class BatchDoor(Protocol):
    services: Services

    def authorize(self, action: str, queue: str) -> Principal: ...
    def require_json_body(self) -> None: ...
    def body(self) -> Any: ...
    def store_name(self, queue: str) -> str: ...
    def render_messages(self, messages: list[Message], *, meta: bool = False) -> Response: ...


#: the largest byte budget the store takes; a larger ``maxBytes`` (up to Java's Long.MAX_VALUE, the
#: contract's maximum) is no tighter, so it is taken as this
MAX_BATCH_BYTES = 2**62


def _tokens(value: Any) -> list[str]:
    """A body of batch tokens: a JSON array of token strings (no coercion: an extension, not EmoDB's ``List<String>``)."""
    if not isinstance(value, list):
        raise wire.bad_json("the body must be a JSON array of batch tokens")
    for item in value:
        if not isinstance(item, str):  # the store checks each token's form
            raise wire.bad_json(f"a batch token is a string, got {json.dumps(item)[:80]}")
    return value


def _count(count: int) -> Response:
    return Response.whole(b'{"count":%d}' % count, "application/json")


def claim_batch(door: BatchDoor, queue: str) -> Response:
    """Claim a batch named by ``token``, or fetch it again (same messages, same order, claims
    renewed to ``ttl``)."""
    door.authorize("poll", queue)
    args = request.args
    token = args.get("token")
    limit = wire.int_param(args, "limit", 1000)
    ttl = wire.int_param(args, "ttl", 300)
    max_bytes = wire.int_param(args, "maxBytes", None, maximum=wire.JAVA_LONG_MAX)
    meta = wire.bool_param(args, "meta")
    assert limit is not None and ttl is not None
    name = door.store_name(queue)
    if not token:
        raise wire.illegal_argument("token is required")
    if not 1 <= limit <= MAX_BATCH_CLAIM:
        raise wire.illegal_argument(f"Limit must be >0 and <={MAX_BATCH_CLAIM}")
    if not 1 <= ttl <= wire.MAX_CLAIM_TTL:
        raise wire.illegal_argument("ClaimTtl must be >0 and <=1 hour")
    if max_bytes is not None and max_bytes <= 0:
        raise wire.illegal_argument("MaxBytes must be >0")
    budget = None if max_bytes is None else min(max_bytes, MAX_BATCH_BYTES)
    batch = door.services.batches().claim_batch(name, token, limit, float(ttl), budget)
    return door.render_messages(batch.messages, meta=meta)


def renew_batches(door: BatchDoor, queue: str) -> Response:
    """Extend the claims of whole batches: ``{"count": renewed}``."""
    door.require_json_body()
    door.authorize("poll", queue)
    ttl = wire.int_param(request.args, "ttl", 300)
    assert ttl is not None
    tokens = _tokens(door.body())
    name = door.store_name(queue)
    if not 1 <= ttl <= wire.MAX_CLAIM_TTL:
        raise wire.illegal_argument("ClaimTtl must be >0 and <=1 hour")
    return _count(door.services.batches().renew_batches(name, tokens, float(ttl)))


def ack_batches(door: BatchDoor, queue: str) -> Response:
    """Acknowledge every message of whole batches and forget them: ``{"count": acked}``."""
    door.require_json_body()
    door.authorize("poll", queue)
    tokens = _tokens(door.body())
    name = door.store_name(queue)
    return _count(door.services.batches().ack_batches(name, tokens))
