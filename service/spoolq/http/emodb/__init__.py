"""EmoDB QueueService (``/queue/1``) and DedupQueueService (``/dedupq/1``) front doors.

Wire-compatible with classic EmoDB (see ``docs/compatibility.md`` for the deliberate
deviations). Each view checks, in EmoDB's order: Content-Type (415), authentication and
permission (403), query parameters in declaration order (400 text), the JSON body (422 / 400
JSON), then the service rules (400 text with ``X-BV-Exception``), and makes one store call.

``create_blueprint(services, dedup=...)`` returns the blueprint of one resource. Every endpoint
is a row of one typed table (:func:`routes`): its method and rule, the view that answers it and
its documentation. The views are thin functions of the door and the URL's path variable, in
:mod:`.messages` (send, poll, peek, renew, ack), :mod:`.queues` (size, claims, purge, moves,
``_queues``, ``_settings``) and :mod:`.batches` (batch claims); what they share is in
:mod:`.door`, their query parameters in :mod:`.params`, EmoDB's payloads, parameter grammar and
error bodies in :mod:`.wire`. Errors are rendered in one place, :func:`.wire.render`.

Queue mapping: ``/queue/1/{q}`` is store queue ``q`` (kind standard); ``/dedupq/1/{q}`` is
store queue ``__dedupq:{q}`` (kind dedup). Both doors share the ``queue|...`` permissions.
EmoDB's lowercase rule holds for the queues an EmoDB client creates; a queue another door made
(``sqs:123456789012:us-east-1:Orders``, ``disque:MyJobs``) is reached by its store name, and
its permissions are checked under the name its own door checks
(:func:`~spoolq.http.overview.permission_name`).

Extension: ``archive=true|false`` on send, sendbatch and _sendbatch: the archive setting the queues
must have; a queue the send creates is created with it, one that exists with the other setting is
a 400 and nothing is sent. ``GET /queue/1/{q}/_settings`` shows a queue's settings and ``POST`` with some of them
changes them (:mod:`spoolq.queue_settings`): reading needs ``get_status``, changing needs what a
purge needs (``poll``; ``admin`` as well on an SQS queue) and ``post`` on a new dead-letter queue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from flask_smorest import Blueprint
from marshmallow import Schema

from spoolq.http import apidoc
from spoolq.http import schemas as s
from spoolq.http.context import Services
from spoolq.http.emodb import batches, messages, params, queues
from spoolq.http.emodb.door import EmoDoor
from spoolq.http.framing import Response

__all__ = ["create_blueprint", "routes"]

#: a view of a rule with one path variable (a queue's name, a move's reference): the door and its value
PathView = Callable[[EmoDoor, str], Response]
#: a view of a rule without one
RootView = Callable[[EmoDoor], Response]
Endpoint = Callable[..., Response]


class Doc(NamedTuple):
    """An endpoint's documentation: its answers, and the query and body it takes."""

    ok: Mapping[str, Any]
    errors: Mapping[str, Any]
    query: type[Schema] | None = None
    body: apidoc.SchemaRef | None = None


class PathRoute(NamedTuple):
    """An endpoint whose rule has one path variable (``<queue>``, ``<ref>``)."""

    method: str
    rule: str
    #: the ``operationId`` (``dedup_`` before it on ``/dedupq/1``) and the Flask endpoint
    name: str
    view: PathView
    summary: str
    doc: Doc

    def endpoint(self, door: EmoDoor) -> Endpoint:
        view = self.view

        def endpoint(**path: str) -> Response:
            (value,) = path.values()
            return view(door, value)
        return endpoint


class RootRoute(NamedTuple):
    """An endpoint of the resource itself (``_sendbatch``, ``_move``, ``_queues``)."""

    method: str
    rule: str
    name: str
    view: RootView
    summary: str
    doc: Doc

    def endpoint(self, door: EmoDoor) -> Endpoint:
        view = self.view

        def endpoint() -> Response:
            return view(door)
        return endpoint


Route = PathRoute | RootRoute

_ERRORS = apidoc.emodb_errors()
_BODY_ERRORS = apidoc.emodb_errors(body=True)
_SUCCESS = apidoc.ok_json(s.SuccessSchema)
_MESSAGES = apidoc.ok_json(s.MessageSchema(many=True), "messages (possibly [])")
_COUNT = apidoc.ok_json(s.COUNT, "a bare JSON integer")
_BATCH_COUNT = apidoc.ok_json(s.BatchCountSchema)


def _message_routes(dedup: bool) -> list[Route]:
    """Sending, claiming and acknowledging messages."""
    return [
        PathRoute("POST", "/<queue>/send", "send", messages.send, "Send one message",
                  Doc(_SUCCESS, _BODY_ERRORS, params.SendQuery, s.ANY_JSON)),
        PathRoute("POST", "/<queue>/sendbatch", "send_batch", messages.send_batch,
                  "Send messages to one queue (all or nothing)",
                  Doc(_SUCCESS, _BODY_ERRORS, params.SendQuery, s.ANY_LIST)),
        RootRoute("POST", "/_sendbatch", "send_batches", messages.send_batches,
                  "Send messages to several queues (all or nothing)",
                  Doc(_SUCCESS, apidoc.emodb_errors(body=True, queue_forbidden=True), params.SendQuery,
                      s.BATCH_MAP)),
        PathRoute("GET", "/<queue>/poll", "poll", messages.poll, "Claim and return up to limit messages",
                  Doc(_MESSAGES, _ERRORS, params.PollQuery)),
        PathRoute("GET", "/<queue>/peek", "peek", messages.peek, "Return up to limit messages without claiming",
                  Doc(_MESSAGES, _ERRORS, params.DedupPeekQuery if dedup else params.PeekQuery)),
        PathRoute("POST", "/<queue>/renew", "renew", messages.renew, "Extend claims (ttl=0 releases them)",
                  Doc(_SUCCESS, _BODY_ERRORS, params.RenewQuery, s.ID_LIST)),
        PathRoute("POST", "/<queue>/ack", "ack", messages.ack, "Acknowledge (delete) messages",
                  Doc(_SUCCESS, _BODY_ERRORS, params.PartitionedQuery, s.ID_LIST)),
        PathRoute("POST", "/<queue>/claimbatch", "claim_batch", batches.claim_batch,
                  "Claim a batch named by a token, or fetch it again (spoolq extension)",
                  Doc(_MESSAGES, _ERRORS, params.ClaimBatchQuery)),
        PathRoute("POST", "/<queue>/renewbatches", "renew_batches", batches.renew_batches,
                  "Extend the claims of batches (spoolq extension)",
                  Doc(_BATCH_COUNT, _BODY_ERRORS, params.RenewBatchesQuery, s.TOKEN_LIST)),
        PathRoute("POST", "/<queue>/ackbatches", "ack_batches", batches.ack_batches,
                  "Acknowledge batches (spoolq extension)", Doc(_BATCH_COUNT, _BODY_ERRORS, body=s.TOKEN_LIST)),
    ]


def _queue_routes(dedup: bool) -> list[Route]:
    """Counting, releasing, purging and moving whole queues, and their settings."""
    settings_ok = apidoc.ok_json(s.QueueSettingsSchema, "the queue's settings after the change")
    table: list[Route] = [
        PathRoute("GET", "/<queue>/size", "size", queues.size, "Count messages (exact up to limit)",
                  Doc(_COUNT, _ERRORS, params.DedupSizeQuery if dedup else params.SizeQuery)),
        PathRoute("GET", "/<queue>/claimcount", "claim_count", queues.claim_count, "Count unexpired claims",
                  Doc(_COUNT, _ERRORS, params.PartitionedQuery)),
        PathRoute("POST", "/<queue>/unclaimall", "unclaim_all", queues.unclaim_all, "Release every claim",
                  Doc(_SUCCESS, _ERRORS, params.PartitionedQuery)),
        PathRoute("DELETE", "/<queue>", "purge", queues.purge, "Delete every message",
                  Doc(_SUCCESS, _ERRORS, params.PartitionedQuery)),
        RootRoute("POST", "/_move", "move", queues.move, "Start moving every message of one queue to another",
                  Doc(apidoc.ok_json(s.MoveRefSchema), _ERRORS, params.MoveQuery)),
        PathRoute("GET", "/<queue>/_settings", "get_settings", queues.get_settings,
                  "A queue's settings (spoolq extension)",
                  Doc(apidoc.ok_json(s.QueueSettingsSchema), apidoc.emodb_errors(not_found=True))),
        PathRoute("POST", "/<queue>/_settings", "update_settings", queues.update_settings,
                  "Change some of a queue's settings (spoolq extension)",
                  Doc(settings_ok, apidoc.emodb_errors(body=True, not_found=True), body=s.QueueSettingsChangeSchema)),
        PathRoute("GET", "/_move/<ref>", "move_status", queues.move_status, "Status of a move",
                  Doc(apidoc.ok_json(s.MoveStatusSchema), apidoc.emodb_errors(move=True))),
    ]
    if not dedup:
        table.append(RootRoute("GET", "/_queues", "list_queues", queues.list_queues,
                               "List queues with their counts (spoolq extension)",
                               Doc(apidoc.ok_json(s.QueueSummarySchema(many=True),
                                                  "queues the key may get_status, by name"),
                                   _ERRORS, params.ListQueuesQuery)))
    return table


def routes(dedup: bool) -> list[Route]:
    """Every endpoint of ``/queue/1`` (or, ``dedup``, ``/dedupq/1``), in the contract's order."""
    return _message_routes(dedup) + _queue_routes(dedup)


def _path_parameters(rule: str, *, dedup: bool) -> list[dict[str, Any]]:
    parameters = []
    if "<queue>" in rule:
        parameters.append(apidoc.queue_path_param(store_names=not dedup))
    if "<ref>" in rule:
        parameters.append({"in": "path", "name": "ref", "required": True, "schema": {"type": "string"}})
    return parameters


def create_blueprint(services: Services, *, dedup: bool) -> Blueprint:
    """The ``/queue/1`` (or ``/dedupq/1``) blueprint bound to ``services``."""
    name = "dedupq" if dedup else "queue"
    blp = Blueprint(name, __name__, url_prefix=f"/{name}/1",
                    description=("EmoDB DedupQueueService" if dedup else "EmoDB QueueService")
                    + " (wire-compatible; the deviations are in the compatibility notes)")
    door = EmoDoor(services, dedup=dedup)
    prefix = "dedup_" if dedup else ""
    for route in routes(dedup):
        doc = route.doc
        operation = apidoc.operation(prefix + route.name, route.summary, ok=doc.ok, query=doc.query,
                                     body=doc.body, errors=doc.errors)
        endpoint = route.endpoint(door)
        endpoint.__name__ = route.name
        endpoint.__doc__ = None
        blp.route(route.rule, methods=[route.method], parameters=_path_parameters(route.rule, dedup=dedup),
                  endpoint=route.name)(apidoc.documented(endpoint, **operation))
    return blp
