"""SNS topics declared in the config file: made at start if missing, brought to their declared
settings and subscriptions, beside the declared queues (:mod:`spoolq.config.declared_queues`)::

    topics:
      - name: orders                 # a name ending in .fifo is a FIFO topic
        region: eu-west-1            # default: the service's SQS region (account: its SQS account)
        display_name: Orders
        signature_version: 2         # 1 (SHA1withRSA, the default) or 2 (SHA256withRSA)
        tags: {team: shop}
        subscriptions:
          - queue: orders-books      # an SQS queue of the topic's account and region (or its ARN)
            raw: true                # RawMessageDelivery
            filter_policy: {kind: [book]}          # a mapping, or its JSON text
            filter_policy_scope: MessageAttributes # or MessageBody
            dead_letter: orders-dlq  # the subscription's dead-letter queue (RedrivePolicy)
      - name: audit.fifo
        content_based_dedup: true
        subscriptions: [{queue: audit.fifo}]

Each entry is checked as SNS checks the same request (names, a FIFO topic's FIFO queues, filter
policies with :mod:`spoolq.topics.filter_policy`, AWS's limits), and every mistake is one line naming the
entry (``spoolq check-config`` prints them all; ``spoolq serve`` applies nothing of a file with one
and says why). Applying makes a missing topic, sets the attributes and tags an entry names (the
others keep their values), and subscribes each declared queue with the declared attributes (a
subscription of that queue that exists with other attributes gets them); a subscription the file
does not declare is left alone, as a queue's messages are. The queues themselves are not made
here: declare them under ``queues:``. Like declared queues' dead-letter queues, the queues a
declared subscription names are the operator's choice (whoever may edit the file and reload the
service), so no identity's ``post`` is asked for them (see "A second queue" in :mod:`spoolq.access.auth`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from spoolq.errors import SpoolqError
from spoolq.queues import names as queue_names
from spoolq.settings.config_file import load_config, unknown_keys
from spoolq.settings.server import ConfigRefused, Settings, SettingsError
from spoolq.topics import filter_policy
from spoolq.topics.catalog import (
    AlreadyExists,
    Subscription,
    Topic,
    TopicKey,
    TopicRegistry,
    changed_topic,
    subscription_id,
)

TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
FIFO_TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,251}\.fifo$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+){1,3}$")
_QUEUE_ARN = re.compile(r"^arn:aws:sqs:([a-z0-9-]+):(\d{12}):(.+)$")
ENTRY_FIELDS = {"name", "region", "account", "display_name", "signature_version", "content_based_dedup", "tags",
                "subscriptions"}
SUBSCRIPTION_FIELDS = {"queue", "raw", "filter_policy", "filter_policy_scope", "dead_letter"}


class TopicDeclarationsRefused(ConfigRefused):
    """The ``topics:`` or ``sns:`` section has mistakes: :attr:`problems` holds one line for each."""


@dataclass(frozen=True)
class DeclaredSubscription:
    queue_arn: str
    attributes: Mapping[str, str]


@dataclass(frozen=True)
class DeclaredTopic:
    key: TopicKey
    attributes: Mapping[str, str]
    tags: Mapping[str, str]
    subscriptions: tuple[DeclaredSubscription, ...] = field(default=())


def _queue_arn(value: Any, key: TopicKey, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must name an SQS queue")
    match = _QUEUE_ARN.match(value)
    region, account, name = match.groups() if match else (key.region, key.account, value)
    if not queue_names.SQS_NAME.match(name):
        raise ValueError(f"{what} {value!r} is not an SQS queue name")
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _subscription(raw: Any, key: TopicKey, where: str) -> DeclaredSubscription:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: each subscription is a mapping with a queue")
    unknown = set(raw) - SUBSCRIPTION_FIELDS
    if unknown:
        raise ValueError(f"{where}: unknown fields {', '.join(sorted(map(str, unknown)))} "
                         f"(known: {', '.join(sorted(SUBSCRIPTION_FIELDS))})")
    arn = _queue_arn(raw.get("queue"), key, f"{where}: queue")
    if arn.endswith(".fifo") and not key.fifo:
        raise ValueError(f"{where}: a FIFO queue cannot be subscribed to a standard topic")
    attributes: dict[str, str] = {}
    if "raw" in raw:
        if not isinstance(raw["raw"], bool):
            raise ValueError(f"{where}: raw is true or false")
        attributes["RawMessageDelivery"] = "true" if raw["raw"] else "false"
    scope = raw.get("filter_policy_scope", filter_policy.ATTRIBUTES)
    if scope not in (filter_policy.ATTRIBUTES, filter_policy.BODY):
        raise ValueError(f"{where}: filter_policy_scope is MessageAttributes or MessageBody")
    if "filter_policy_scope" in raw:
        attributes["FilterPolicyScope"] = scope
    if "filter_policy" in raw:
        policy = raw["filter_policy"]
        text = policy if isinstance(policy, str) else json.dumps(policy)
        try:
            filter_policy.compile_policy(text, scope)
        except filter_policy.PolicyError as bad:
            raise ValueError(f"{where}: {bad.message}") from None
        attributes["FilterPolicy"] = text
    if "dead_letter" in raw:
        dlq = _queue_arn(raw["dead_letter"], key, f"{where}: dead_letter")
        if key.fifo and arn.endswith(".fifo") and not dlq.endswith(".fifo"):
            raise ValueError(f"{where}: a FIFO subscription of a FIFO topic needs a FIFO dead_letter queue")
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq})
    return DeclaredSubscription(arn, attributes)


def _entry(raw: Any, settings: Settings, where: str) -> DeclaredTopic:
    if not isinstance(raw, Mapping):
        raise ValueError("each topic is a mapping with a name")
    unknown = set(raw) - ENTRY_FIELDS
    if unknown:
        raise ValueError(f"unknown fields {', '.join(sorted(map(str, unknown)))} "
                         f"(known: {', '.join(sorted(ENTRY_FIELDS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not (TOPIC_NAME.match(name) or FIFO_TOPIC_NAME.match(name)):
        raise ValueError("name must be 1 to 256 letters, digits, _ and - (a FIFO topic's ending in .fifo)")
    region, account = str(raw.get("region", settings.sqs_region)), str(raw.get("account", settings.sqs_account_id))
    if not _REGION.match(region):
        raise ValueError(f"region {region!r} is not an AWS region name")
    if not (len(account) == 12 and account.isdigit()):
        raise ValueError("account must be 12 digits")
    key = TopicKey(account, region, name)
    attributes = {"FifoTopic": "true"} if key.fifo else {}
    if "display_name" in raw:
        attributes["DisplayName"] = str(raw["display_name"])[:100]
    if "signature_version" in raw:
        if str(raw["signature_version"]) not in ("1", "2"):
            raise ValueError("signature_version is 1 or 2")
        attributes["SignatureVersion"] = str(raw["signature_version"])
    if "content_based_dedup" in raw:
        if not key.fifo or not isinstance(raw["content_based_dedup"], bool):
            raise ValueError("content_based_dedup is true or false, for a FIFO topic only")
        attributes["ContentBasedDeduplication"] = "true" if raw["content_based_dedup"] else "false"
    tags = raw.get("tags") or {}
    if not isinstance(tags, Mapping) or len(tags) > 50 or not all(isinstance(k, str) for k in tags):
        raise ValueError("tags map at most 50 names to values")
    subs = raw.get("subscriptions") or []
    if not isinstance(subs, list):
        raise ValueError("subscriptions is a list")
    declared = tuple(_subscription(s, key, f"subscriptions[{i}]") for i, s in enumerate(subs))
    if len({s.queue_arn for s in declared}) != len(declared):
        raise ValueError("a queue is subscribed twice")
    return DeclaredTopic(key, attributes, {k: str(v) for k, v in tags.items()}, declared)


def parse_topics(config: Mapping[str, Any], settings: Settings) -> list[DeclaredTopic]:
    """The entries of ``config``'s ``topics:``, every one checked; :class:`TopicDeclarationsRefused`
    with one line per mistake if any has one."""
    raw = config.get("topics")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TopicDeclarationsRefused(["config: topics must be a list of topics (- name: ...)"])
    problems: list[str] = []
    declared: list[DeclaredTopic] = []
    for index, entry in enumerate(raw):
        label = f"topics[{index}]" + (f" ({entry['name']})" if isinstance(entry, Mapping)
                                      and isinstance(entry.get("name"), str) else "")
        try:
            topic = _entry(entry, settings, label)
        except ValueError as e:
            problems.append(f"config: {label}: {e}")
            continue
        if any(d.key == topic.key for d in declared):
            problems.append(f"config: {label}: the same topic is declared twice")
            continue
        declared.append(topic)
    if problems:
        raise TopicDeclarationsRefused(problems)
    return declared


def apply_topics(topics: TopicRegistry, declared: list[DeclaredTopic], owner: str) -> list[str]:
    """Make and bring every declared topic and subscription to its declared state; one line each."""
    return [_apply(topics, topic, owner) for topic in declared]


def _apply(topics: TopicRegistry, topic: DeclaredTopic, owner: str) -> str:
    made = topics.get_topic(topic.key) is None
    with contextlib.suppress(AlreadyExists):  # exists with other attributes: changed below
        topics.create_topic(topic.key, topic.attributes, topic.tags)

    def declared_settings(t: Topic) -> Topic:
        return changed_topic(t, attributes={**t.attributes, **topic.attributes}, tags={**t.tags, **topic.tags})

    topics.change_topic(topic.key, declared_settings)
    for sub in topic.subscriptions:
        with contextlib.suppress(AlreadyExists):  # exists with other attributes: given them below
            _made, made_now = topics.subscribe(topic.key, "sqs", sub.queue_arn, sub.attributes, confirmed=True,
                                               token="", owner=owner)
            if made_now:
                continue
        topics.change_subscription(topic.key, subscription_id(topic.key, "sqs", sub.queue_arn),
                                   functools.partial(_with_attributes, dict(sub.attributes)))
    return (f"topic {topic.key.store_name}: {'created' if made else 'kept'}, "
            f"{len(topic.subscriptions)} declared subscriptions")


def _with_attributes(attributes: dict[str, str], s: Subscription) -> Subscription:
    return Subscription(s.topic, s.id, s.protocol, s.endpoint, attributes, True, s.token, s.owner, s.created)


def allowed_http_endpoints(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The HTTP/HTTPS endpoint prefixes SNS subscriptions may deliver to (the config file's ``sns:
    http_endpoints:``, see :mod:`spoolq.http.sns.webhooks`); ValueError names a bad one."""
    section = config.get("sns") or {}
    if not isinstance(section, Mapping):
        raise ValueError("config: sns must be a mapping")
    prefixes = section.get("http_endpoints") or []
    if not isinstance(prefixes, list):
        raise ValueError("config: sns.http_endpoints must be a list of URL prefixes")
    out = []
    for i, prefix in enumerate(prefixes):
        parts = urlsplit(prefix) if isinstance(prefix, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"config: sns.http_endpoints[{i}] must be an http:// or https:// URL with a host")
        out.append(prefix if parts.path else prefix + "/")
    return tuple(out)


def parse_section(config: Mapping[str, Any], settings: Settings) -> list[DeclaredTopic]:
    """The ``sns:`` section checked and the ``topics:`` parsed (:mod:`spoolq.config.check` runs
    this); :class:`TopicDeclarationsRefused` with one line per mistake."""
    problems = unknown_keys(config.get("sns") or {}, ("http_endpoints",), "config: sns: ") \
        if isinstance(config.get("sns"), Mapping) else []
    try:
        allowed_http_endpoints(config)
    except ValueError as e:
        problems.append(str(e))
    try:
        declared = parse_topics(config, settings)
    except TopicDeclarationsRefused as e:
        problems += e.problems
    if problems:
        raise TopicDeclarationsRefused(problems)
    return declared


def load_topics(settings: Settings) -> list[DeclaredTopic]:
    """The declared topics of the config file ``settings`` names (none without one)."""
    if settings.config is None:
        return []
    return parse_section(load_config(settings.config), settings)


def apply_topics_from_settings(settings: Settings, say: Callable[[str], None],
                               complain: Callable[[str], None] | None = None) -> list[str]:
    """Read the config file's ``topics:`` and apply them under ``settings.root``, saying what
    happened (``say``); every line about something not applied goes to ``complain`` (default
    ``say``) and is returned (none: all applied), as :func:`spoolq.config.declared_queues.apply_from_settings`.
    Run by ``spoolq serve``'s master at start and on reload."""
    complain = complain or say
    failures: list[str] = []

    def fail(line: str) -> None:
        failures.append(line)
        complain(line)

    try:
        declared = load_topics(settings)
    except SettingsError as e:
        for problem in getattr(e, "problems", [str(e)]):
            fail(f"declared topics not applied: {problem}")
        return failures
    if not declared:
        return failures
    try:
        for line in apply_topics(TopicRegistry(settings.root, settings.node_id or "node"), declared,
                                 settings.sqs_account_id):
            say(line)
    except SpoolqError as e:
        fail(f"declared topics not all applied: {e}")
    return failures
