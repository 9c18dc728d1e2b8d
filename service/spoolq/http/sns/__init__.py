"""The SNS front door: topics that fan out to the SQS door's queues, on the same port as SQS.

AWS clients given one endpoint send SNS and SQS requests to the same ``/``; the app's first hook
asks this door first (:meth:`SnsDoor.answer`) and the door takes the request when it is SNS's
(:func:`.wire.is_sns`: the SigV4 credential scope's service ``sns``, or an SNS-only ``Action`` in
open mode), else leaves it to the SQS door. The certificate notifications are signed with is
served at ``GET /SimpleNotificationService-<key id>.pem`` (:mod:`.signing`).

Every action is dispatched from one table, :data:`ACTIONS`, to a thin handler in
:mod:`.topic_actions`, :mod:`.subscription_actions` or :mod:`.publishing` (parse, one call of the
topic registry and/or the store's contract, render). Errors are rendered in one place,
:func:`.wire.render_error`. Every request is authenticated by SigV4 (:mod:`spoolq.http.sigv4`,
scope ``sns``) unless the service is open (an unsigned request may name an API key in
``X-BV-API-Key`` instead, as the console's publish form does), then authorised per topic
(:mod:`.access`) before its handler runs. Actions of SMS and mobile push answer ``InvalidAction``:
this service cannot deliver there. Topics and subscriptions live in the data root (:mod:`spoolq.topics.catalog`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from flask import Blueprint, Request, Response, abort

from spoolq.access.auth import Principal
from spoolq.config.declared_topics import allowed_http_endpoints
from spoolq.errors import SpoolqError
from spoolq.http import framing, sigv4
from spoolq.http.context import Services
from spoolq.http.sigv4 import InvalidClientTokenId
from spoolq.http.sns import access, publishing, subscription_actions, topic_actions, wire
from spoolq.http.sns.context import Env, caller_of, queue_of_arn
from spoolq.http.sns.errors import InternalError, InvalidAction
from spoolq.http.sns.signing import SigningKeys
from spoolq.http.sns.webhooks import Webhooks
from spoolq.observability.counting import name_door
from spoolq.settings.config_file import load_config
from spoolq.settings.server import SettingsError
from spoolq.store.model import OutgoingMessage
from spoolq.topics.catalog import Subscription, TopicRegistry

__all__ = ["ACTIONS", "SnsDoor", "create_door"]

log = logging.getLogger(__name__)

Handler = Callable[[Env, Mapping[str, Any]], dict[str, Any]]


class Action(NamedTuple):
    handler: Handler
    #: the permission the action needs on its topic (``publish``, ``subscribe``, ``get_status``, ``admin``)
    permission: str


ACTIONS: dict[str, Action] = {
    "CreateTopic": Action(topic_actions.create_topic, "admin"),
    "GetTopicAttributes": Action(topic_actions.get_topic_attributes, "get_status"),
    "SetTopicAttributes": Action(topic_actions.set_topic_attributes, "admin"),
    "ListTopics": Action(topic_actions.list_topics, "get_status"),
    "DeleteTopic": Action(topic_actions.delete_topic, "admin"),
    "TagResource": Action(topic_actions.tag_resource, "admin"),
    "UntagResource": Action(topic_actions.untag_resource, "admin"),
    "ListTagsForResource": Action(topic_actions.list_tags_for_resource, "get_status"),
    "AddPermission": Action(topic_actions.add_permission, "admin"),
    "RemovePermission": Action(topic_actions.remove_permission, "admin"),
    "PutDataProtectionPolicy": Action(topic_actions.put_data_protection_policy, "admin"),
    "GetDataProtectionPolicy": Action(topic_actions.get_data_protection_policy, "get_status"),
    "Subscribe": Action(subscription_actions.subscribe, "subscribe"),
    "Unsubscribe": Action(subscription_actions.unsubscribe, "subscribe"),
    "ConfirmSubscription": Action(subscription_actions.confirm_subscription, "subscribe"),
    "GetSubscriptionAttributes": Action(subscription_actions.get_subscription_attributes, "get_status"),
    "SetSubscriptionAttributes": Action(subscription_actions.set_subscription_attributes, "subscribe"),
    "ListSubscriptions": Action(subscription_actions.list_subscriptions, "get_status"),
    "ListSubscriptionsByTopic": Action(subscription_actions.list_subscriptions_by_topic, "get_status"),
    "Publish": Action(publishing.publish, "publish"),
    "PublishBatch": Action(publishing.publish_batch, "publish"),
}


class SnsDoor:
    """The SNS door of one app: its topic registry and signing key are made on first use
    (under gunicorn, in the worker)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._lock = threading.Lock()
        self._topics: TopicRegistry | None = None
        self._keys: SigningKeys | None = None
        self._webhooks: tuple[Webhooks, tuple[str, ...]] | None = None

    def topics(self) -> TopicRegistry:
        if self._topics is None:
            with self._lock:
                if self._topics is None:
                    settings = self.services.settings
                    self._topics = TopicRegistry(settings.root, settings.node_id or "node")
        return self._topics

    def keys(self) -> SigningKeys:
        if self._keys is None:
            topics = self.topics()  # before the lock: it takes the lock itself
            with self._lock:
                if self._keys is None:
                    self._keys = SigningKeys(topics)
        return self._keys

    def webhooks(self) -> tuple[Webhooks, tuple[str, ...]]:
        """HTTP deliveries and the allowed endpoints (the config file's ``sns: http_endpoints:``, read
        once; a config that ``spoolq serve`` started with is valid: :mod:`spoolq.config.declared_topics`)."""
        if self._webhooks is None:
            config = self.services.settings.config
            try:
                prefixes = allowed_http_endpoints(load_config(config)) if config is not None else ()
            except (ValueError, SettingsError) as e:
                log.error("SNS: no HTTP endpoint is allowed: %s", e)
                prefixes = ()
            self._webhooks = (Webhooks(self._dead_letter), prefixes)
        return self._webhooks

    def _dead_letter(self, sub: Subscription, body: str) -> None:
        """An HTTP delivery that failed every try: into the subscription's dead-letter queue, if any."""
        try:
            target = json.loads(sub.attributes.get("RedrivePolicy") or "{}").get("deadLetterTargetArn", "")
        except (ValueError, AttributeError):
            return
        queue = queue_of_arn(target) if isinstance(target, str) else None
        if queue is not None:
            self.services.store().fan_out([(queue, OutgoingMessage(body.encode("utf-8"), attributes={
                "sender": publishing.SNS_SENDER, "src": queue}))])

    def answer(self, http: Request) -> Response | None:
        """The reply to a request for ``/`` when it is SNS's, else ``None`` (the SQS door's)."""
        if not wire.is_sns(http):
            return None
        environ = http.environ
        environ[framing.DOOR_KEY] = "sns"
        name_door("sns")
        request_id = wire.new_request_id()
        json_reply = False
        try:
            services = self.services
            req = wire.parse_request(http, request_id)
            json_reply = req.json_reply
            principal = self._principal(http, req.action)
            action = ACTIONS.get(req.action)
            environ[framing.OPERATION_KEY] = req.action if action is not None else "unknown"
            if action is None:
                raise InvalidAction(req.action)
            caller = caller_of(http, services.settings)
            access.authorize(principal, req.action, action.permission, req.params, caller)
            hooks, allowed = self.webhooks()
            env = Env(services.store(), self.topics(), caller, principal, self.keys().signer,
                      services.metrics.topic_messages, hooks, allowed, environ.get("HTTP_X_AMZN_TRACE_ID"))
            return wire.render(req, action.handler(env, req.params))
        except SpoolqError as exc:
            return wire.render_error(exc, request_id, json_reply)
        except Exception:
            log.exception("SNS request failed")
            return wire.render_error(InternalError(), request_id, json_reply)

    def _principal(self, http: Request, action: str) -> Principal | None:
        """Who sends the request (``None``: open mode, or a ConfirmSubscription, which needs no
        signature: its token is the proof, as AWS's SubscribeURL). A request signed with SigV4 is
        verified; one that is not signed may name an API key in ``X-BV-API-Key`` (the console's
        publish form: the same identities and permissions, :mod:`spoolq.access.auth`)."""
        auth = self.services.auth
        signed = wire.scope_service(http.environ, http.args) is not None
        if auth.open or (action == "ConfirmSubscription" and not signed):
            return None
        key = http.environ.get("HTTP_X_BV_API_KEY")
        if not signed and key:
            principal = auth.principal(key, None)
            if principal is None:
                raise InvalidClientTokenId()
            return principal
        return sigv4.verify(http, auth, service="sns")

    def certificate(self, key_id: str) -> Response:
        pem = self.keys().certificate(key_id)
        if pem is None:
            abort(404)
        return Response(pem, 200, mimetype="application/x-pem-file")


def create_door(services: Services) -> tuple[SnsDoor, Blueprint]:
    """The SNS door and its blueprint (the signing certificate's route); have the app's first hook
    call the door's ``answer`` for ``/`` before the SQS door sees the request."""
    door = SnsDoor(services)
    bp = Blueprint("sns", __name__)

    @bp.get("/SimpleNotificationService-<key_id>.pem")
    def sns_certificate(key_id: str) -> Response:
        if not key_id.isalnum() or len(key_id) != 32:
            abort(404)
        return door.certificate(key_id)

    return door, bp
