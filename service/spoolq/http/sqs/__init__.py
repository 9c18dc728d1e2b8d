"""The SQS front door: unmodified boto3, the AWS CLI and older Query-protocol SDKs.

``create_blueprint(services)`` returns a Flask blueprint serving

* ``POST /`` -- JSON protocol (``X-Amz-Target: AmazonSQS.<Action>``) or Query
  protocol (form-encoded ``Action=``), chosen per request (see :mod:`.wire`);
* ``GET /?Action=...`` -- the Query protocol's GET form (parameters, and optionally a
  presigned SigV4 signature, in the query string), answered like the POST;
* ``GET|POST /<12-digit account>/<queue name>`` and ``/<region>/<account>/<queue name>`` --
  a queue URL (Java SDK v1 style, PHP's JSON calls, GETs); the path supplies ``QueueUrl``
  when the request lacks it. A queue URL without any action answers 404
  ``UnknownOperationException``; CreateQueue and ListQueues are not actions of a queue URL
  (``InvalidAction``), as in AWS.

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
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from flask import Blueprint, g, request
from flask.blueprints import BlueprintSetupState
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter

from spoolq.errors import SpoolqError
from spoolq.http import framing
from spoolq.http.context import Services
from spoolq.http.framing import Response
from spoolq.http.sqs import access, messages, moves, queues, sigv4, wire
from spoolq.http.sqs.context import REGION, caller_of
from spoolq.http.sqs.env import AttemptCache, Env
from spoolq.http.sqs.errors import InternalError, InvalidAction

__all__ = ["ACTIONS", "create_blueprint"]

log = logging.getLogger(__name__)

Handler = Callable[[Env, Mapping[str, Any]], dict[str, Any]]


class Action(NamedTuple):
    handler: Handler
    #: the permission the action needs (``post``, ``poll``, ``get_status``, ``admin``: :mod:`.access`)
    permission: str


#: every action: its handler and the permission it needs on its queue (:mod:`.access`)
ACTIONS: dict[str, Action] = {
    "CreateQueue": Action(queues.create_queue, "admin"),
    "GetQueueUrl": Action(queues.get_queue_url, "get_status"),
    "ListQueues": Action(queues.list_queues, "get_status"),
    "GetQueueAttributes": Action(queues.get_queue_attributes, "get_status"),
    "SetQueueAttributes": Action(queues.set_queue_attributes, "admin"),
    "DeleteQueue": Action(queues.delete_queue, "admin"),
    "PurgeQueue": Action(queues.purge_queue, "admin"),
    "TagQueue": Action(queues.tag_queue, "admin"),
    "UntagQueue": Action(queues.untag_queue, "admin"),
    "ListQueueTags": Action(queues.list_queue_tags, "get_status"),
    "ListDeadLetterSourceQueues": Action(queues.list_dead_letter_source_queues, "get_status"),
    "AddPermission": Action(queues.add_permission, "admin"),
    "RemovePermission": Action(queues.remove_permission, "admin"),
    "SendMessage": Action(messages.send_message, "post"),
    "SendMessageBatch": Action(messages.send_message_batch, "post"),
    "ReceiveMessage": Action(messages.receive_message, "poll"),
    "DeleteMessage": Action(messages.delete_message, "poll"),
    "DeleteMessageBatch": Action(messages.delete_message_batch, "poll"),
    "ChangeMessageVisibility": Action(messages.change_message_visibility, "poll"),
    "ChangeMessageVisibilityBatch": Action(messages.change_message_visibility_batch, "poll"),
    "StartMessageMoveTask": Action(moves.start_message_move_task, "admin"),
    "CancelMessageMoveTask": Action(moves.cancel_message_move_task, "admin"),
    "ListMessageMoveTasks": Action(moves.list_message_move_tasks, "get_status"),
}


#: actions that name no queue, which AWS refuses on a queue URL (recorded: test_get_create_queue_fails,
#: test_get_list_queues_fails)
NOT_ON_QUEUE_URL = frozenset({"CreateQueue", "ListQueues"})


class RegionConverter(BaseConverter):
    """A path segment that is an AWS region name (the region segment of a queue URL)."""

    regex = REGION.pattern.strip("^$")


def _names_action() -> bool:
    return bool(request.headers.get("X-Amz-Target") or request.values.get("Action"))


def _register_region_converter(state: BlueprintSetupState) -> None:
    state.app.url_map.converters.setdefault("sqs_region", RegionConverter)


class SqsBlueprint(Blueprint):
    """The SQS blueprint, and :attr:`answer_get_root`: the app's first hook calls it for a
    ``GET /`` (the Query protocol's GET form lives at a path that is otherwise the service's)."""

    answer_get_root: Callable[[], Response | None]


def create_blueprint(services: Services) -> SqsBlueprint:
    """The SQS blueprint over the app's store, settings and credentials; register it at the
    application root, and have the app's first hook call its ``answer_get_root`` on ``GET /``."""
    bp = SqsBlueprint("sqs", __name__)
    bp.record_once(_register_region_converter)
    dispatch = _dispatcher(services, AttemptCache())

    @bp.post("/")
    def sqs_root() -> Response:
        return dispatch(None)

    def sqs_root_get() -> Response | None:
        """``GET /?Action=...``: ``GET /`` is otherwise the service's (the console's redirect)."""
        if not _names_action():
            return None
        request.environ.setdefault(framing.STARTED_KEY, time.perf_counter())  # the request is observed
        try:
            return dispatch(None)
        except SpoolqError as exc:
            return spoolq_error(exc)
        except Exception as exc:  # rendered as the SQS error it is
            return unexpected_error(exc)

    bp.answer_get_root = sqs_root_get

    # only a 12-digit account segment routes here, so /queue/1/..., /mq/... never reach this rule
    @bp.route("/<int(fixed_digits=12):account>/<queue_name>", methods=["GET", "POST"])
    def sqs_queue_path(account: int, queue_name: str) -> Response:
        return dispatch(f"{request.host_url.rstrip('/')}/{account:012d}/{queue_name}")

    @bp.route("/<sqs_region:region>/<int(fixed_digits=12):account>/<queue_name>", methods=["GET", "POST"])
    def sqs_region_queue_path(region: str, account: int, queue_name: str) -> Response:
        return dispatch(f"{request.host_url.rstrip('/')}/{region}/{account:012d}/{queue_name}")

    bp.register_error_handler(SpoolqError, spoolq_error)
    bp.register_error_handler(Exception, unexpected_error)
    return bp


def _dispatcher(services: Services, attempts: AttemptCache) -> Callable[[str | None], Response]:
    """What answers one SQS request; its argument is the queue URL the path names, if any."""
    settings, authenticator = services.settings, services.auth

    def dispatch(path_queue_url: str | None) -> Response:
        http = framing.current_request()  # the request and g taken once: each proxy use is a lookup
        state = g._get_current_object()
        state.sqs_request_id = request_id = wire.new_request_id()  # an error before the protocol is
        # known guesses it (spoolq_error): guessing here too would only repeat that
        principal = None if authenticator.open else sigv4.verify(http, authenticator)
        if path_queue_url is not None and not _names_action():
            return wire.render_unknown_operation(request_id)
        req = wire.parse_request(http, request_id)
        state.sqs_protocol = req.protocol
        action = ACTIONS.get(req.action)
        http.environ[framing.OPERATION_KEY] = req.action if action is not None else "unknown"  # metrics label
        if action is None or (path_queue_url is not None and req.action in NOT_ON_QUEUE_URL):
            raise InvalidAction(f"The action {req.action} is not valid for this endpoint.")
        params = req.params
        if path_queue_url is not None and "QueueUrl" not in params:
            params = {**params, "QueueUrl": path_queue_url}
        caller = caller_of(http, settings, principal.name if principal is not None else None)
        if principal is not None:  # open mode: everything is allowed
            access.authorize(principal, req.action, action.permission, params, caller)
        env = Env(services.store(), caller, attempts, principal=principal, long_poll=services.poll)
        return wire.render(req, action.handler(env, params))
    return dispatch


def spoolq_error(exc: SpoolqError) -> Response:
    """The SQS door's rendering of an error of the service."""
    protocol = g.get("sqs_protocol") or wire.guess_protocol(request)
    return wire.render_error(exc, protocol, g.get("sqs_request_id") or "")


def unexpected_error(exc: Exception) -> Response:
    """The SQS door's rendering of any other error (an HTTP error as such, anything else as InternalError)."""
    if isinstance(exc, HTTPException):
        return wire.render_http_error(exc, request)
    log.exception("SQS %s failed", request.headers.get("X-Amz-Target") or "request")
    protocol = g.get("sqs_protocol") or wire.guess_protocol(request)
    return wire.render_error(InternalError(), protocol, g.get("sqs_request_id") or "")
