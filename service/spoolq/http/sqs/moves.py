"""Dead-letter redrive: StartMessageMoveTask, CancelMessageMoveTask, ListMessageMoveTasks.

Backed by the store's asynchronous ``move(source, destination, max_per_second)``.
The source must be a dead-letter queue (some queue's RedrivePolicy targets it).
Without ``DestinationArn`` AWS returns each message to the queue it came from; the
store moves queue to queue, so spoolq moves to the one source queue and refuses
(InvalidParameterValue) when the dead-letter queue has several (docs/sqs.md).

``TaskHandle`` is ``base64url(json {"ref": store move ref, "src": source ARN})``. A handle
cancels only a move whose source is an SQS queue and is the handle's ``src`` (so an EmoDB
move ref wrapped in a handle is not a task: the EmoDB door cannot move SQS queues), and
only for a caller with ``admin`` on that source queue (:mod:`.access`).
Store move states map to SQS task statuses: IN_PROGRESS -> RUNNING,
COMPLETE -> COMPLETED, ERROR -> FAILED, CANCELLED -> CANCELLED.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from spoolq.errors import InvalidArgument, UnknownMove
from spoolq.http.sqs.access import require
from spoolq.http.sqs.checks import optional_int, optional_str, required_str
from spoolq.http.sqs.context import arn_of_store_name, split_store_name, store_name_of_arn
from spoolq.http.sqs.env import Env
from spoolq.http.sqs.errors import InvalidParameterValue, ResourceNotFound
from spoolq.http.sqs.queues import dead_letter_sources
from spoolq.store import MoveState, MoveStatus

STATUS = {MoveState.IN_PROGRESS: "RUNNING", MoveState.COMPLETE: "COMPLETED", MoveState.ERROR: "FAILED",
          MoveState.CANCELLED: "CANCELLED"}


def _queue_of_arn(env: Env, arn: str) -> str:
    store_name = store_name_of_arn(arn)
    if store_name is None:
        raise InvalidParameterValue(f"Value {arn} for parameter SourceArn is invalid. Reason: Invalid ARN.")
    try:
        env.queue(store_name)
    except Exception:
        raise ResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.") from None
    return store_name


def _handle(ref: str, source_arn: str) -> str:
    raw = json.dumps({"ref": ref, "src": source_arn}, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _parse_handle(handle: str) -> tuple[str, str]:
    """``(store move ref, source ARN)`` of a TaskHandle."""
    try:
        parsed = json.loads(base64.urlsafe_b64decode(handle.encode("ascii")))
        ref, src = parsed["ref"], parsed["src"]
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
        raise ResourceNotFound("Task does not exist.") from None
    if not isinstance(ref, str) or not isinstance(src, str):
        raise ResourceNotFound("Task does not exist.")
    return ref, src


def start_message_move_task(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    source_arn = required_str(p, "SourceArn")
    destination_arn = optional_str(p, "DestinationArn")
    rate = optional_int(p, "MaxNumberOfMessagesPerSecond", 1, 500,
                        "MaxNumberOfMessagesPerSecond must be between 1 and 500.")
    source = _queue_of_arn(env, source_arn)
    origins = dead_letter_sources(env, source)
    if not origins:
        raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
    if destination_arn is not None:
        destination = store_name_of_arn(destination_arn)
        if destination is None:
            raise InvalidParameterValue(
                f"Value {destination_arn} for parameter DestinationArn is invalid. Reason: Invalid ARN.")
        env.queue(destination)
    elif len(origins) == 1:
        destination = origins[0]
    else:
        raise InvalidParameterValue("This dead-letter queue has several source queues; spoolq needs a "
                                    "DestinationArn to move its messages.")
    if any(m.state is MoveState.IN_PROGRESS for m in env.store.list_moves(source)):
        raise InvalidParameterValue("There is already a task running. Only one active task is allowed for a "
                                    "source queue arn at a given time.")
    ref = env.store.move(source, destination, max_per_second=rate)
    return {"TaskHandle": _handle(ref, source_arn)}


def cancel_message_move_task(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    ref, source_arn = _parse_handle(required_str(p, "TaskHandle"))
    try:
        status = env.store.move_status(ref)
    except (UnknownMove, InvalidArgument):
        raise ResourceNotFound("Task does not exist.") from None
    if split_store_name(status.source) is None or arn_of_store_name(status.source) != source_arn:
        raise ResourceNotFound("Task does not exist.")
    require(env.principal, "admin", "CancelMessageMoveTask", status.source)
    status = env.store.cancel_move(ref)
    return {"ApproximateNumberOfMessagesMoved": status.moved}


def _render(env: Env, status: MoveStatus) -> dict[str, Any]:
    source_arn = arn_of_store_name(status.source)
    out: dict[str, Any] = {"Status": STATUS[status.state], "SourceArn": source_arn,
                           "DestinationArn": arn_of_store_name(status.destination),
                           "ApproximateNumberOfMessagesMoved": status.moved,
                           "StartedTimestamp": int(status.started_at * 1000)}
    if status.state is MoveState.IN_PROGRESS:
        out["TaskHandle"] = _handle(status.ref, source_arn)
        out["ApproximateNumberOfMessagesToMove"] = status.moved + env.store.size(status.source)
    if status.max_per_second is not None:
        out["MaxNumberOfMessagesPerSecond"] = status.max_per_second
    if status.error:
        out["FailureReason"] = status.error
    return out


def list_message_move_tasks(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    source_arn = required_str(p, "SourceArn")
    limit = optional_int(p, "MaxResults", 1, 10, "MaxResults must be between 1 and 10.") or 1
    source = _queue_of_arn(env, source_arn)
    moves = sorted(env.store.list_moves(source), key=lambda m: m.started_at, reverse=True)[:limit]
    return {"Results": [_render(env, m) for m in moves]}
