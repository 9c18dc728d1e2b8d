"""What every SNS handler receives, and how SNS names topics, subscriptions and queues.

Scoping
    Topics live per account and region, as SQS queues do: the region is the SigV4 credential
    scope's (``Credential=<key>/<date>/<region>/sns/aws4_request``), else the server's default
    region (``settings.sqs_region``); the account is ``settings.sqs_account_id``.

Names
    Topic ``name`` of account ``A`` in region ``R`` has the ARN ``arn:aws:sns:R:A:name`` and the
    permission name ``sns:A:R:name`` (:mod:`spoolq.access.auth`); a subscription's ARN is its topic's ARN
    and ``:<subscription id>``. An SQS endpoint is a queue ARN, ``arn:aws:sqs:R:A:q``, delivered
    to the store queue ``sqs:A:R:q`` (the SQS door's queue of that name).

``Env`` is built per request; handlers are plain functions ``(env, params) -> reply dict``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Request

from spoolq.access.auth import Principal
from spoolq.http.sigv4 import CREDENTIAL
from spoolq.http.sns.errors import InvalidParameter, SubscriptionNotFound
from spoolq.queues import names as queue_names
from spoolq.settings.server import Settings
from spoolq.store.contract import QueueStore
from spoolq.topics.catalog import TopicKey, TopicRegistry

TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
FIFO_TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,251}\.fifo$")
_QUEUE_ARN = re.compile(r"^arn:[a-z-]+:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_.-]{1,80})$")
_SUB_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: a phone number as AWS takes it: digits, an optional leading +, single separators between digits
#: (recorded: "+12/34-567.890" is taken, "+15--551234567", "NAA+15551234567", "+15551234567." are not)
_PHONE = re.compile(r"^\+?[0-9]+(?:[-./ ]?[0-9]+)*$")


@dataclass(frozen=True)
class Caller:
    account: str
    region: str
    #: ``<scheme>://<host>`` of the request: where SigningCertURL and UnsubscribeURL point
    base_url: str

    def topic(self, name: str) -> TopicKey:
        return TopicKey(self.account, self.region, name)


def caller_of(request: Request, settings: Settings) -> Caller:
    match = CREDENTIAL.search(request.environ.get("HTTP_AUTHORIZATION", ""))
    if match is None and "X-Amz-Credential" in request.args:
        match = CREDENTIAL.search("Credential=" + request.args["X-Amz-Credential"])
    region = match.group(3) if match else settings.sqs_region
    return Caller(settings.sqs_account_id, region, f"{request.scheme}://{request.host}")


@dataclass
class Env:
    store: QueueStore
    topics: TopicRegistry
    caller: Caller
    #: who signed the request (``None``: open mode); see :mod:`.access`
    principal: Principal | None
    #: signs notifications (:mod:`.signing`), made on first use
    signer: Callable[[], Any]
    #: counts what happens to a topic's messages (``Metrics.topic_messages``); ``None``: nothing counted
    count: Callable[[str, str, int], None] | None = None
    #: HTTP/HTTPS deliveries (:mod:`.webhooks`) and the endpoint prefixes the operator allows
    webhooks: Any = None
    http_endpoints: tuple[str, ...] = ()
    #: the request's X-Ray header (``X-Amzn-Trace-Id``): SQS's AWSTraceHeader of the copies delivered
    trace: str | None = None
    clock: Callable[[], float] = time.time

    def topic_arn(self, arn: Any, parameter: str = "TopicArn") -> TopicKey:
        """The topic an ARN names, in the request's region (a topic of another region answers
        ``Invalid parameter: TopicArn``, as AWS: a region's endpoint serves its own topics)."""
        key = topic_of_arn(arn, parameter)
        if key.region != self.caller.region:
            raise InvalidParameter(parameter)
        return key

    def subscription_arn(self, arn: Any) -> tuple[TopicKey, str]:
        key, sub_id = subscription_of_arn(arn)
        if key.region != self.caller.region:
            raise InvalidParameter("SubscriptionArn")
        return key, sub_id

    def may(self, permission: str, name: str, resource: str = "topic") -> bool:
        return self.principal is None or self.principal.can(permission, name, resource)


def _arn_parts(arn: Any, parameter: str, empty_is_short: bool = False) -> list[str]:
    """An ARN's parts; ``empty_is_short``: an empty one has one part (recorded: Publish with
    ``TopicArn=""``), else it is a missing value (recorded: Unsubscribe)."""
    if not isinstance(arn, str) or not (arn or empty_is_short):
        raise InvalidParameter(parameter, "no value for required parameter")
    parts = arn.split(":")
    if len(parts) < 6:
        raise InvalidParameter(parameter, f"An ARN must have at least 6 elements, not {len(parts)}")
    return parts


def topic_of_arn(arn: Any, parameter: str = "TopicArn") -> TopicKey:
    """The topic an ARN names; ``InvalidParameter`` (AWS's wording) when it names none."""
    parts = _arn_parts(arn, parameter, empty_is_short=True)
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sns" or not parts[4].isdigit() \
            or not (TOPIC_NAME.match(parts[5]) or FIFO_TOPIC_NAME.match(parts[5])):
        raise InvalidParameter(parameter)
    return TopicKey(parts[4], parts[3], parts[5])


def subscription_of_arn(arn: Any, parameter: str = "SubscriptionArn") -> tuple[TopicKey, str]:
    """The topic and subscription id a subscription ARN names."""
    parts = _arn_parts(arn, parameter)
    if len(parts) == 6:
        raise InvalidParameter("SubscriptionId")  # a topic's ARN (recorded: test_unsubscribe_wrong_arn_format)
    if len(parts) != 7 or parts[0] != "arn" or parts[2] != "sns" or not parts[4].isdigit() \
            or not (TOPIC_NAME.match(parts[5]) or FIFO_TOPIC_NAME.match(parts[5])):
        raise InvalidParameter(parameter)
    if not _SUB_ID.match(parts[6]):
        raise SubscriptionNotFound()
    return TopicKey(parts[4], parts[3], parts[5]), parts[6]


def queue_of_arn(arn: str) -> str | None:
    """The store name of the SQS queue an ARN names, or ``None``."""
    match = _QUEUE_ARN.match(arn)
    if match is None or not queue_names.SQS_NAME.match(match.group(3)):
        return None
    region, account, name = match.groups()
    return queue_names.sqs_store_name(account, region, name)


def queue_arn_of(store_name: str) -> str:
    parts = queue_names.split_sqs_store_name(store_name)
    if parts is None:
        return store_name
    account, region, name = parts
    return f"arn:aws:sqs:{region}:{account}:{name}"


def text(params: Mapping[str, Any], name: str, default: str | None = None) -> str | None:
    """An optional string parameter (a map or list where a string belongs is refused)."""
    value = params.get(name, default)
    if value is not None and not isinstance(value, str):
        raise InvalidParameter(name)
    return value


def string_map(params: Mapping[str, Any], name: str) -> dict[str, str]:
    """An optional map of strings (``Attributes``)."""
    value = params.get(name)
    if value is None or value == "":
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidParameter(name)
    return dict(value)


def tag_list(params: Mapping[str, Any], name: str = "Tags") -> dict[str, str]:
    """``Tags.member.N.Key``/``.Value`` as a map; ``Invalid parameter: Duplicated keys are not allowed.``"""
    value = params.get(name)
    if value is None or value == "":
        return {}
    if not isinstance(value, list):
        raise InvalidParameter(name)
    tags: dict[str, str] = {}
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("Key"), str):
            raise InvalidParameter(name)
        if item["Key"] in tags:
            raise InvalidParameter("Duplicated keys are not allowed.")
        tags[item["Key"]] = str(item.get("Value", ""))
    return tags


def phone_number(value: str) -> bool:
    """Whether AWS takes ``value`` as a phone number (an ``sms`` endpoint, Publish's PhoneNumber)."""
    return bool(_PHONE.match(value)) and 1 <= sum(c.isdigit() for c in value) <= 15
