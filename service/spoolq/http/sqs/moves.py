"""Dead-letter redrive: StartMessageMoveTask, CancelMessageMoveTask, ListMessageMoveTasks.

Backed by the store's asynchronous ``move(source, destination, max_per_second)``.
The source must be a dead-letter queue (some queue's RedrivePolicy targets it).
Without ``DestinationArn`` each message returns to the queue it was dead-lettered from, as
AWS does it (the store's move ``to_origins``); a message whose origin is not recorded (sent to
the dead-letter queue directly) or no longer exists goes to the first source queue. The caller
needs ``post`` on every queue the task may write to (:func:`spoolq.access.auth.may_send_into`): the
destination, or without one every source queue (``AccessDenied`` naming the first it may not).

``TaskHandle`` is AWS's format: ``base64(json {"taskId": <UUID>, "sourceArn": <source ARN>})``
(recorded: test_basic_move_task_workflow decodes it so). The task id is a UUID derived from
the store's move ref; a handle is resolved among the moves of its source queue, so it cancels
only a move whose source is that SQS queue, and only for a caller with ``admin`` on it
(:mod:`.access`). A handle that does not decode is InvalidParameterValue; a source queue that
does not exist, or a task it does not have, is 404 ResourceNotFoundException, as AWS answers.

A task started without ``DestinationArn`` is listed without one, as AWS lists it; the door
remembers such tasks in the dead-letter queue's own bookkeeping (``spoolq:default_moves``).
``ApproximateNumberOfMessagesToMove`` is the moved count plus what the source still holds
(all of it once the task completed).
Store move states map to SQS task statuses: IN_PROGRESS -> RUNNING,
COMPLETE -> COMPLETED, ERROR -> FAILED, CANCELLED -> CANCELLED.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from spoolq.errors import InvalidArgument, UnknownMove
from spoolq.http.sqs.access import require
from spoolq.http.sqs.checks import optional_int, optional_str, required_str
from spoolq.http.sqs.context import arn_of_store_name, split_store_name, store_name_of_arn
from spoolq.http.sqs.env import Env
from spoolq.http.sqs.errors import InvalidParameterValue, QueueDoesNotExist, ResourceNotFound
from spoolq.http.sqs.queues import dead_letter_sources
from spoolq.store.model import MoveState, MoveStatus, QueueInfo

#: the dead-letter queue's bookkeeping of the moves started without DestinationArn (newest last)
DEFAULT_MOVES_KEY = "spoolq:default_moves"
KEEP_DEFAULT_MOVES = 20
STATUS = {MoveState.IN_PROGRESS: "RUNNING", MoveState.COMPLETE: "COMPLETED", MoveState.ERROR: "FAILED",
          MoveState.CANCELLED: "CANCELLED"}


def _queue_of_arn(env: Env, arn: str, parameter: str = "SourceArn") -> str:
    store_name = store_name_of_arn(arn)
    if store_name is None:
        raise InvalidParameterValue(f"Value {arn} for parameter {parameter} is invalid. Reason: Invalid ARN.")
    try:
        env.queue(store_name)
    except QueueDoesNotExist:
        raise ResourceNotFound(f"The resource that you specified for the {parameter} parameter doesn't exist.") \
            from None
    return store_name


def task_id(ref: str) -> str:
    """The UUID an SQS client sees as the task id of a store move."""
    return str(uuid.UUID(bytes=hashlib.sha256(ref.encode("utf-8")).digest()[:16], version=4))


def _handle(ref: str, source_arn: str) -> str:
    raw = json.dumps({"taskId": task_id(ref), "sourceArn": source_arn}, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(raw).decode("ascii")


def _parse_handle(handle: str) -> tuple[str, str]:
    """``(task id, source ARN)`` of a TaskHandle."""
    invalid = InvalidParameterValue("Value for parameter TaskHandle is invalid.")
    try:
        parsed = json.loads(base64.b64decode(handle.encode("ascii"), validate=True))
        task, src = parsed["taskId"], parsed["sourceArn"]
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
        raise invalid from None
    if not isinstance(task, str) or not isinstance(src, str):
        raise invalid
    return task, src


def start_message_move_task(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    source_arn = required_str(p, "SourceArn")
    destination_arn = optional_str(p, "DestinationArn")
    rate = optional_int(p, "MaxNumberOfMessagesPerSecond", 1, 500,
                        "MaxNumberOfMessagesPerSecond must be between 1 and 500.")
    source = _queue_of_arn(env, source_arn)
    origins = dead_letter_sources(env, source)
    if not origins:
        raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
    # without a destination each message goes back to the queue it was dead-lettered from (the
    # first source queue takes any whose origin is unknown or gone)
    if destination_arn is None:
        for origin in origins:  # a message goes back to any of them
            env.require_send_into(origin)
    destination = _queue_of_arn(env, destination_arn, "DestinationArn") if destination_arn is not None \
        else origins[0]
    if any(m.state is MoveState.IN_PROGRESS for m in env.store.list_moves(source)):
        raise InvalidParameterValue("There is already a task running. Only one active task is allowed for a "
                                    "source queue arn at a given time.")
    ref = env.store.move(source, destination, max_per_second=rate, to_origins=destination_arn is None)
    if destination_arn is None:
        def remember(info: QueueInfo) -> QueueInfo:
            kept = [r for r in info.config.extra.get(DEFAULT_MOVES_KEY, "").split(",") if r][-KEEP_DEFAULT_MOVES + 1:]
            return replace(info, config=replace(info.config, extra={**info.config.extra,
                                                                    DEFAULT_MOVES_KEY: ",".join([*kept, ref])}))
        env.store.change_queue(source, remember)
    return {"TaskHandle": _handle(ref, arn_of_store_name(source))}


def cancel_message_move_task(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    task, source_arn = _parse_handle(required_str(p, "TaskHandle"))
    if store_name_of_arn(source_arn) is None:
        raise ResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist.")
    source = _queue_of_arn(env, source_arn)
    found = [m for m in env.store.list_moves(source) if task_id(m.ref) == task and m.source == source]
    if not found or split_store_name(source) is None:
        raise ResourceNotFound("Task does not exist.")
    require(env.principal, "admin", "CancelMessageMoveTask", source)
    try:
        status = env.store.cancel_move(found[0].ref)
    except (UnknownMove, InvalidArgument):
        raise ResourceNotFound("Task does not exist.") from None
    return {"ApproximateNumberOfMessagesMoved": status.moved}


def _render(env: Env, status: MoveStatus, default_moves: set[str]) -> dict[str, Any]:
    source_arn = arn_of_store_name(status.source)
    out: dict[str, Any] = {"Status": STATUS[status.state], "SourceArn": source_arn,
                           "ApproximateNumberOfMessagesMoved": status.moved,
                           "StartedTimestamp": int(status.started_at * 1000)}
    if status.ref not in default_moves:
        out["DestinationArn"] = arn_of_store_name(status.destination)
    left = 0 if status.state is MoveState.COMPLETE else env.store.size(status.source)
    out["ApproximateNumberOfMessagesToMove"] = status.moved + left
    if status.state is MoveState.IN_PROGRESS:
        out["TaskHandle"] = _handle(status.ref, source_arn)
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
    default_moves = set(env.queue(source).config.extra.get(DEFAULT_MOVES_KEY, "").split(","))
    return {"Results": [_render(env, m, default_moves) for m in moves]}
