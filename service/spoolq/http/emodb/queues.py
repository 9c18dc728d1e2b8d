"""The EmoDB views of whole queues: size, claimcount, unclaimall, purge, _move, and the spoolq
extensions ``_queues`` and ``_settings``.

Each view checks permission (403), the query parameters (:mod:`.params`) and the queue's name,
then makes one store call and answers.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from flask import request

from spoolq.auth import may_send_into
from spoolq.errors import QueueNotFound
from spoolq.http.emodb import params, queue_settings, wire
from spoolq.http.emodb.door import EmoDoor, json_answer, success
from spoolq.http.framing import Response
from spoolq.queue_names import manage_action, permission_name, split_sqs_store_name, user_kind
from spoolq.store.model import MoveState

_MOVE_STATES = {MoveState.IN_PROGRESS: "IN_PROGRESS", MoveState.COMPLETE: "COMPLETE"}


def size(door: EmoDoor, queue: str) -> Response:
    door.authorize("get_status", queue)
    query = params.Size.read(request.args, dedup=door.dedup)
    name = door.store_name(queue)
    limit = query.checked().limit
    return json_answer(str(door.services.store().size(name, limit=limit)))


def claim_count(door: EmoDoor, queue: str) -> Response:
    door.authorize("get_status", queue)
    params.partitioned(request.args)
    name = door.store_name(queue)
    return json_answer(str(door.services.store().claim_count(name)))


def unclaim_all(door: EmoDoor, queue: str) -> Response:
    door.authorize("poll", queue)
    params.partitioned(request.args)
    name = door.store_name(queue)
    door.services.store().unclaim_all(name)
    return success()


def purge(door: EmoDoor, queue: str) -> Response:
    door.authorize("poll", queue)
    if split_sqs_store_name(queue) is not None:
        door.authorize("admin", queue)  # an SQS queue: purging it is an SQS admin action
    params.partitioned(request.args)
    name = door.store_name(queue)
    door.services.store().purge(name)
    return success()


def list_queues(door: EmoDoor) -> Response:
    """spoolq extension: every queue this key may ``get_status``, with its counts.

    Dedup queues are listed under their ``/dedupq/1`` name with ``kind: dedup``; counts are
    exact up to ``limit`` messages per queue and estimated beyond (``exact: false``)."""
    who = door.principal()
    query = params.ListQueues.read(request.args)
    store = door.services.store()
    out: list[dict[str, Any]] = []
    strip = len(wire.DEDUP_STORE_PREFIX)
    for name in store.list_queues():
        shown = name[strip:] if name.startswith(wire.DEDUP_STORE_PREFIX) else name
        if not shown.startswith(query.prefix) or not who.can("get_status", permission_name(name)):
            continue
        with contextlib.suppress(QueueNotFound):  # deleted since it was listed
            kind = user_kind(name, store.get_queue(name).kind.value)
            c = store.counts(name, limit=query.limit)
            out.append({"name": shown, "kind": kind, "ready": c.ready, "claimed": c.claimed,
                        "delayed": c.delayed, "exact": c.exact})
    out.sort(key=lambda q: q["name"])
    return json_answer(json.dumps(out, separators=(",", ":")))


def move(door: EmoDoor) -> Response:
    """Start moving every message of one queue to another: ``{"id": ref}``."""
    who = door.principal()
    source, dest = params.Move.read(request.args)
    if not (who.can("poll", door.permission(source)) and may_send_into(who, door.permission_store_name(dest))):
        raise wire.not_authorized()
    if not source:
        raise wire.illegal_argument("from is required")
    if not dest:
        raise wire.illegal_argument("to is required")
    if source == dest:
        raise wire.illegal_argument("cannot move queue to itself")
    if split_sqs_store_name(source) is not None or split_sqs_store_name(dest) is not None:
        # SQS queues move only through SQS StartMessageMoveTask, so every move of an SQS
        # queue is an SQS task, cancellable there by the queue's admins
        raise wire.illegal_argument("SQS queues are moved with SQS StartMessageMoveTask")
    src_name, dest_name = door.store_name(source), door.store_name(dest)
    ref = door.services.store().move(src_name, dest_name)
    return json_answer(wire.compact({"id": ref}))


def move_status(door: EmoDoor, ref: str) -> Response:
    """A move's status, for callers that may see the status of its source or destination."""
    who = door.principal()
    if not wire.MOVE_REF_RE.fullmatch(ref):
        raise wire.unknown_move(ref)
    status = door.services.store().move_status(ref)
    prefix = wire.DEDUP_STORE_PREFIX
    if status.source.startswith(prefix) != door.dedup or status.destination.startswith(prefix) != door.dedup:
        raise wire.unknown_move(ref)  # a move of the other resource's kind
    strip = len(prefix) if door.dedup else 0
    source, destination = status.source[strip:], status.destination[strip:]
    if not (who.can("get_status", door.permission(source)) or who.can("get_status", door.permission(destination))):
        raise wire.not_authorized()
    body = {"from": source, "to": destination, "status": _MOVE_STATES.get(status.state, "ERROR")}
    return json_answer(wire.compact(body))


def get_settings(door: EmoDoor, queue: str) -> Response:
    """spoolq extension: a queue's settings (:mod:`.queue_settings`)."""
    door.authorize("get_status", queue)
    return json_answer(queue_settings.settings_json(door.services.store(), door.store_name(queue)))


def update_settings(door: EmoDoor, queue: str) -> Response:
    """spoolq extension: change some of a queue's settings; answers all of them."""
    door.require_json_body()
    who = door.authorize(manage_action(queue), queue)
    changes = door.body()
    name = door.store_name(queue)
    return json_answer(queue_settings.change_settings(door.services.store(), who, name, changes))
