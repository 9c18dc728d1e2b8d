"""The SQS front door: unmodified boto3, the AWS CLI and older Query-protocol SDKs.

``create_blueprint(settings, store)`` returns a Flask blueprint serving

* ``POST /`` -- JSON protocol (``X-Amz-Target: AmazonSQS.<Action>``) or Query
  protocol (form-encoded ``Action=``), chosen per request (see :mod:`.wire`);
* ``POST /<12-digit account>/<queue name>`` -- Query protocol posted to a queue URL
  (Java SDK v1 style); the path supplies ``QueueUrl`` when the form lacks it.

All 23 actions of the 2012-11-05 model are dispatched from one table to thin
handlers in :mod:`.queues`, :mod:`.messages` and :mod:`.moves` (parse, one store
call, render). Errors are rendered in one place, :func:`.wire.render_error`, from
the error's declared ``sqs_type`` / ``sqs_query_code`` / ``sqs_status``.
Every request is authenticated by SigV4 (:mod:`.sigv4`) unless no credentials are configured
at all, then authorised per queue (:mod:`.access`) before its handler runs.
Nothing is built at import; the blueprint owns only a per-process attempt cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from flask import Blueprint, Response, g, request
from werkzeug.exceptions import HTTPException

from spoolq.errors import SpoolqError
from spoolq.http import framing
from spoolq.http.auth import Authenticator
from spoolq.http.sqs import access, messages, moves, queues, sigv4, wire
from spoolq.http.sqs.context import caller_of
from spoolq.http.sqs.env import AttemptCache, Env
from spoolq.http.sqs.errors import InternalError, InvalidAction
from spoolq.settings import Settings
from spoolq.store import QueueStore

__all__ = ["ACTIONS", "create_blueprint"]

log = logging.getLogger(__name__)

Handler = Callable[[Env, Mapping[str, Any]], dict[str, Any]]

ACTIONS: dict[str, Handler] = {
    "CreateQueue": queues.create_queue,
    "GetQueueUrl": queues.get_queue_url,
    "ListQueues": queues.list_queues,
    "GetQueueAttributes": queues.get_queue_attributes,
    "SetQueueAttributes": queues.set_queue_attributes,
    "DeleteQueue": queues.delete_queue,
    "PurgeQueue": queues.purge_queue,
    "TagQueue": queues.tag_queue,
    "UntagQueue": queues.untag_queue,
    "ListQueueTags": queues.list_queue_tags,
    "ListDeadLetterSourceQueues": queues.list_dead_letter_source_queues,
    "AddPermission": queues.add_permission,
    "RemovePermission": queues.remove_permission,
    "SendMessage": messages.send_message,
    "SendMessageBatch": messages.send_message_batch,
    "ReceiveMessage": messages.receive_message,
    "DeleteMessage": messages.delete_message,
    "DeleteMessageBatch": messages.delete_message_batch,
    "ChangeMessageVisibility": messages.change_message_visibility,
    "ChangeMessageVisibilityBatch": messages.change_message_visibility_batch,
    "StartMessageMoveTask": moves.start_message_move_task,
    "CancelMessageMoveTask": moves.cancel_message_move_task,
    "ListMessageMoveTasks": moves.list_message_move_tasks,
}


def create_blueprint(settings: Settings, store: QueueStore, auth: Authenticator | None = None) -> Blueprint:
    """The SQS blueprint over ``store``; register it at the application root.

    ``auth`` is the app's :class:`Authenticator` (loaded from ``settings.config`` when omitted)."""
    authenticator = auth if auth is not None else Authenticator.from_settings(settings)
    attempts = AttemptCache()
    bp = Blueprint("sqs", __name__)

    def dispatch(path_queue_url: str | None) -> Response:
        g.sqs_protocol = wire.guess_protocol(request)
        principal = sigv4.verify(request, authenticator)
        req = wire.parse_request(request)
        g.sqs_protocol, g.sqs_request_id = req.protocol, req.request_id
        handler = ACTIONS.get(req.action)
        request.environ[framing.OPERATION_KEY] = req.action if handler is not None else "unknown"  # metrics label
        if handler is None:
            raise InvalidAction(f"The action {req.action} is not valid for this web service.")
        params = req.params
        if path_queue_url is not None and "QueueUrl" not in params:
            params = {**params, "QueueUrl": path_queue_url}
        caller = caller_of(request, settings)
        access.authorize(principal, req.action, params, caller)
        env = Env(store, caller, attempts, principal=principal)
        return wire.render(req, handler(env, params))

    @bp.post("/")
    def sqs_root() -> Response:
        return dispatch(None)

    # only a 12-digit account segment routes here, so /queue/1/..., /mq/... never reach this rule
    @bp.post("/<int(fixed_digits=12):account>/<queue_name>")
    def sqs_queue_path(account: int, queue_name: str) -> Response:
        return dispatch(f"{request.host_url.rstrip('/')}/{account:012d}/{queue_name}")

    @bp.errorhandler(SpoolqError)
    def spoolq_error(exc: SpoolqError) -> Response:
        protocol = g.get("sqs_protocol") or wire.guess_protocol(request)
        return wire.render_error(exc, protocol, g.get("sqs_request_id") or "")

    @bp.errorhandler(Exception)
    def unexpected_error(exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            return wire.render_http_error(exc, request)
        log.exception("SQS %s failed", request.headers.get("X-Amz-Target") or "request")
        protocol = g.get("sqs_protocol") or wire.guess_protocol(request)
        return wire.render_error(InternalError(), protocol, g.get("sqs_request_id") or "")

    return bp
