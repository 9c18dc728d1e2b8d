"""Batch claims on the EmoDB doors (spoolq extension): ``claimbatch``, ``renewbatches``, ``ackbatches``.

The views of :mod:`spoolq.store.batches` for ``/queue/1`` and ``/dedupq/1``, in the door's manner:
permission first (``poll``), then the query parameters in declaration order (:mod:`.params`, 400
text), then the body, then one call into :class:`~spoolq.store.batches.BatchClaims`.
"""

from __future__ import annotations

import json
from typing import Any

from flask import request

from spoolq.http.emodb import params, wire
from spoolq.http.emodb.door import EmoDoor, render_messages
from spoolq.http.framing import Response


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


def claim_batch(door: EmoDoor, queue: str) -> Response:
    """Claim a batch named by ``token``, or fetch it again (same messages, same order, claims
    renewed to ``ttl``)."""
    door.authorize("poll", queue)
    query = params.ClaimBatch.read(request.args)
    name = door.store_name(queue)
    query.check()
    batch = door.services.batches().claim_batch(name, query.token, query.limit, float(query.ttl), query.budget())
    return render_messages(batch.messages, meta=query.meta)


def renew_batches(door: EmoDoor, queue: str) -> Response:
    """Extend the claims of whole batches: ``{"count": renewed}``."""
    door.require_json_body()
    door.authorize("poll", queue)
    ttl = params.read_batch_ttl(request.args)
    tokens = _tokens(door.body())
    name = door.store_name(queue)
    params.check_batch_ttl(ttl)
    return _count(door.services.batches().renew_batches(name, tokens, float(ttl)))


def ack_batches(door: EmoDoor, queue: str) -> Response:
    """Acknowledge every message of whole batches and forget them: ``{"count": acked}``."""
    door.require_json_body()
    door.authorize("poll", queue)
    tokens = _tokens(door.body())
    name = door.store_name(queue)
    return _count(door.services.batches().ack_batches(name, tokens))
