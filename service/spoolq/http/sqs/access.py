"""Which permission each SQS action needs, on which queue (the identities are :mod:`spoolq.access.auth`'s).

An action needs the permission its entry in :data:`spoolq.http.sqs.ACTIONS` names, and is
authorised against the store name of the queue it acts on (``sqs:A:R:name``),
with the same ``queue|<action>|<queue>`` permissions the EmoDB door uses:

==============  ==============================================================================
``post``        SendMessage, SendMessageBatch
``poll``        ReceiveMessage, DeleteMessage(Batch), ChangeMessageVisibility(Batch)
``get_status``  GetQueueUrl, GetQueueAttributes, ListQueueTags, ListDeadLetterSourceQueues,
                ListMessageMoveTasks; ListQueues lists only the queues the caller may get_status
``admin``       CreateQueue, DeleteQueue, PurgeQueue, SetQueueAttributes, TagQueue, UntagQueue,
                AddPermission, RemovePermission, StartMessageMoveTask, CancelMessageMoveTask
                (on the task's source queue)
==============  ==============================================================================

A second queue an action names, one that messages will arrive in, needs ``post`` too
(:func:`spoolq.access.auth.may_send_into`; ``AccessDenied`` naming ``sqs:SendMessage`` on it): the
dead-letter queue of a ``RedrivePolicy`` (CreateQueue, SetQueueAttributes: checked by the handler,
:meth:`.env.Env.dead_letter_queue`, before it looks the queue up), StartMessageMoveTask's
``DestinationArn`` (here), or without one every source queue the messages may return to (the
handler). A ``RedriveAllowPolicy`` names queues allowed to send into the caller's own: it needs
nothing on them, as in AWS.

The check runs after SigV4 and before the handler, so a caller without the permission gets
``AccessDenied`` (403) whether or not the queue exists. A request whose queue cannot be named
(a missing or malformed ``QueueUrl``/``QueueName``/``SourceArn``) goes on to the handler,
which refuses it for that reason. In open mode (no credentials configured) everything is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spoolq.access.auth import Principal, may_send_into
from spoolq.http.sqs.context import QUEUE_NAME, Caller, arn_of_store_name, store_name_of_arn
from spoolq.http.sqs.errors import AccessDenied, SqsError

#: Actions that name no single queue: the handler filters (ListQueues) or resolves it (moves).
UNSCOPED = frozenset({"ListQueues", "CancelMessageMoveTask"})


def deny(principal: Principal, action: str, store_name: str) -> AccessDenied:
    return AccessDenied(f"User: {principal.name} is not authorized to perform: sqs:{action} on resource: "
                        f"{arn_of_store_name(store_name)}")


def require(principal: Principal | None, permission: str, action: str, store_name: str) -> None:
    """Raise ``AccessDenied`` unless ``principal`` (``None``: open mode) holds ``permission`` on the queue."""
    if principal is not None and not principal.can(permission, store_name):
        raise deny(principal, action, store_name)


def _queue_of(action: str, params: Mapping[str, Any], caller: Caller) -> str | None:
    if action in ("CreateQueue", "GetQueueUrl"):
        name = params.get("QueueName")
        return caller.store_name(name) if isinstance(name, str) and QUEUE_NAME.match(name) else None
    if action in ("StartMessageMoveTask", "ListMessageMoveTasks"):
        arn = params.get("SourceArn")
        return store_name_of_arn(arn) if isinstance(arn, str) else None
    url = params.get("QueueUrl")
    if not isinstance(url, str) or not url:
        return None
    try:
        return caller.queue_from_url(url)
    except SqsError:
        return None


def authorize(principal: Principal | None, action: str, permission: str, params: Mapping[str, Any],
              caller: Caller) -> None:
    """Raise ``AccessDenied`` unless ``principal`` may perform ``action``, which needs ``permission``
    (the action's entry in :data:`spoolq.http.sqs.ACTIONS`), with these parameters."""
    if principal is None or action in UNSCOPED:
        return
    queue = _queue_of(action, params, caller)
    if queue is not None:
        require(principal, permission, action, queue)
    if action == "StartMessageMoveTask":
        destination = params.get("DestinationArn")
        target = store_name_of_arn(destination) if isinstance(destination, str) else None
        if target is not None and not may_send_into(principal, target):
            raise deny(principal, "SendMessage", target)
