"""Queue-level SQS actions: each parses its parameters, makes one store call, and renders.

CreateQueue, GetQueueUrl, ListQueues, GetQueueAttributes, SetQueueAttributes,
DeleteQueue, PurgeQueue, TagQueue, UntagQueue, ListQueueTags,
ListDeadLetterSourceQueues, AddPermission, RemovePermission.

Pagination (ListQueues, ListDeadLetterSourceQueues): names are listed in order;
``NextToken`` is the opaque base64 of the last name returned and is only given
when ``MaxResults`` was.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from spoolq.errors import QueueAlreadyExists, QueueDeletedRecently, QueueNotFound
from spoolq.http.overview import COUNT_LIMIT
from spoolq.http.sqs import attributes
from spoolq.http.sqs.checks import optional_int, optional_str, required_str, string_list, string_map
from spoolq.http.sqs.context import QUEUE_NAME, queue_name_of
from spoolq.http.sqs.env import Env
from spoolq.http.sqs.errors import (
    InvalidAttributeName,
    InvalidParameterValue,
    MissingParameter,
    OverLimit,
    PurgeQueueInProgress,
    QueueDoesNotExist,
    QueueNameExists,
)
from spoolq.store.model import QueueInfo, QueueKind

MAX_TAGS = 50
#: seconds after a DeleteQueue before the name can be created again (QueueDeletedRecently), as AWS
RECREATE_AFTER = 60.0
PURGE_INTERVAL = 60.0
#: GetQueueAttributes counts with the limit the metrics and the console count with: every bucket
#: listed below it, the store's kept ready count beyond (an exact count lists every message, 3 s
#: for a queue of 5 million)
APPROXIMATE_COUNT_LIMIT = COUNT_LIMIT
PERMISSION_ACTIONS = ("*", "ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes", "GetQueueUrl",
                      "ListDeadLetterSourceQueues", "PurgeQueue", "ReceiveMessage", "SendMessage")
BAD_NAME = "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
_LABEL = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_ACCOUNT = re.compile(r"^\d{12}$")


def _check_tags(tags: Mapping[str, str]) -> None:
    for key, value in tags.items():
        if not 1 <= len(key) <= 128:
            raise InvalidParameterValue("Tag keys must be between 1 and 128 characters in length.")
        if len(value) > 256:
            raise InvalidParameterValue("Tag values may be up to 256 characters in length.")


def _queue_name(p: Mapping[str, Any], empty_reason: str) -> str:
    name = p.get("QueueName")
    if name is None or name == "":
        raise InvalidParameterValue(empty_reason)
    return required_str(p, "QueueName")


def create_queue(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    name = _queue_name(p, BAD_NAME)
    attrs = string_map(p, "Attributes")
    tags = string_map(p, "tags") or string_map(p, "Tags")
    fifo = attrs.get("FifoQueue", "false").lower() == "true"
    if fifo and not name.endswith(".fifo"):
        raise InvalidParameterValue("Queue name must end in .fifo for FIFO queues")  # the code is AWS's
    if "FifoQueue" in attrs and not name.endswith(".fifo"):
        # FifoQueue=false on a standard queue's name (recorded: test_create_standard_queue_with_fifo_attribute...)
        raise InvalidAttributeName("FifoQueue")
    if not QUEUE_NAME.match(name) or (name.endswith(".fifo") and not fifo):
        raise InvalidParameterValue(BAD_NAME)
    if len(tags) > MAX_TAGS:
        raise InvalidParameterValue(f"Too many tags added for queue {name}.")
    _check_tags(tags)
    kind = QueueKind.FIFO if fifo else QueueKind.STANDARD
    store_name = env.caller.store_name(name)
    settable = {k: v for k, v in attrs.items() if k != "FifoQueue"}
    config = attributes.apply(settable, attributes.defaults(env.new_queue_config), kind, store_name, env.dead_letter_queue)
    try:
        info = env.store.get_queue(store_name)
    except QueueNotFound:
        deleted_at = env.store.deleted_at(store_name)
        if deleted_at is not None and env.clock() - deleted_at < RECREATE_AFTER:
            raise QueueDeletedRecently(f"You must wait {RECREATE_AFTER:g} seconds after deleting a queue before "
                                       "you can create another with the same name.") from None
        try:
            env.store.create_queue(store_name, kind, config, tags, exist_ok=False)
            return {"QueueUrl": env.caller.url(name)}
        except QueueAlreadyExists:  # created meanwhile by another request
            info = env.store.get_queue(store_name)
    differs = "FifoQueue" if info.kind is not kind else attributes.differing_attribute(
        attrs, attributes.render(info, None, env.caller, name))
    if differs is not None:
        raise QueueNameExists(f"A queue already exists with the same name and a different value for attribute "
                              f"{differs}")
    return {"QueueUrl": env.caller.url(name)}


def get_queue_url(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    name = _queue_name(p, "Value  for parameter QueueName is invalid. Reason: Must specify a queue name.")
    owner = optional_str(p, "QueueOwnerAWSAccountId")
    if (owner is not None and owner != env.caller.account) or not QUEUE_NAME.match(name):
        raise QueueDoesNotExist()
    env.queue(env.caller.store_name(name))
    return {"QueueUrl": env.caller.url(name)}


def _page(names: list[str], p: Mapping[str, Any]) -> tuple[list[str], str | None]:
    max_results = optional_int(p, "MaxResults", 1, 1000, "MaxResults must be between 1 and 1000.")
    token = optional_str(p, "NextToken")
    if token is not None:
        if max_results is None:
            raise InvalidParameterValue("NextToken is only valid with MaxResults.")
        try:
            after = base64.urlsafe_b64decode(token.encode("ascii")).decode("utf-8")
        except (ValueError, UnicodeError, binascii.Error):
            raise InvalidParameterValue("Invalid NextToken value.") from None
        names = [n for n in names if n > after]
    limit = max_results or 1000
    page = names[:limit]
    more = max_results is not None and len(names) > limit
    next_token = base64.urlsafe_b64encode(page[-1].encode("utf-8")).decode("ascii") if more else None
    return page, next_token


def list_queues(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    prefix = optional_str(p, "QueueNamePrefix") or ""
    store_prefix = env.caller.store_prefix()
    names = sorted(n[len(store_prefix):] for n in env.store.list_queues(prefix=store_prefix + prefix)
                   if n.startswith(store_prefix) and env.may("get_status", n))
    page, token = _page(names, p)
    result: dict[str, Any] = {}
    if page:
        result["QueueUrls"] = [env.caller.url(n) for n in page]
    if token:
        result["NextToken"] = token
    return result


def get_queue_attributes(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    names = string_list(p, "AttributeNames")
    for name in names:
        if name not in attributes.ALL_NAMES:
            raise InvalidAttributeName(name)
    info = env.queue(store_name)
    if not names:
        return {}
    wants_counts = "All" in names or any(n.startswith("Approximate") for n in names)
    counts = env.store.counts(store_name, limit=APPROXIMATE_COUNT_LIMIT) if wants_counts else None
    rendered = attributes.render(info, counts, env.caller, queue_name_of(store_name))
    if "All" not in names:
        rendered = {k: v for k, v in rendered.items() if k in names}
    else:  # spoolq's own attributes only when named
        rendered = {k: v for k, v in rendered.items() if k in names or k not in attributes.SPOOLQ_ATTRIBUTES}
    return {"Attributes": rendered} if rendered else {}


def set_queue_attributes(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    attrs = string_map(p, "Attributes")
    info = env.queue(store_name)
    for name in attrs:
        if name not in attributes.SETTABLE or (name == "FifoQueue" and info.kind is not QueueKind.FIFO):
            # a FIFO queue takes FifoQueue=true and refuses false (recorded: test_set_unsupported_attribute_fifo)
            raise InvalidAttributeName(name)

    def change(now: QueueInfo) -> QueueInfo:  # from the queue as it is when the change is made
        kept = now.config.dead_letter.queue if now.config.dead_letter is not None else None

        def dead_letter_queue(target: str) -> QueueInfo:  # one named anew needs post on it
            return env.queue(target) if target == kept else env.dead_letter_queue(target)
        config = attributes.apply(attrs, now.config, now.kind, store_name, dead_letter_queue)
        if now.kind is QueueKind.FIFO:
            config = attributes.keep_created_dedup_scope(now.config, config)
        return replace(now, config=config)
    env.store.change_queue(store_name, change)
    return {}


def delete_queue(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    env.queue(store_name)
    env.store.delete_queue(store_name)
    env.attempts.forget(store_name)
    return {}


def purge_queue(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    env.queue(store_name)
    now = env.clock()

    def stamp(info: QueueInfo) -> QueueInfo:  # one purge a minute, also across processes and nodes
        last = float(info.config.extra.get(attributes.PURGE_KEY, "0") or 0)
        if now - last < PURGE_INTERVAL:
            raise PurgeQueueInProgress(queue_name_of(store_name))
        return replace(info, config=replace(info.config, extra={**info.config.extra,
                                                                attributes.PURGE_KEY: f"{now:.3f}"}))
    env.store.change_queue(store_name, stamp)
    env.store.purge(store_name)
    env.attempts.forget(store_name)
    return {}


def tag_queue(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    tags = string_map(p, "Tags")
    env.queue(store_name)
    if not tags:
        raise MissingParameter("Tags")
    _check_tags(tags)

    def merge(info: QueueInfo) -> QueueInfo:
        merged = {**info.tags, **tags}
        if len(merged) > MAX_TAGS:
            raise InvalidParameterValue(f"Too many tags added for queue {queue_name_of(store_name)}.")
        return replace(info, tags=merged)
    env.store.change_queue(store_name, merge)
    return {}


def untag_queue(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    keys = string_list(p, "TagKeys")
    env.queue(store_name)
    if not keys:
        raise InvalidParameterValue("Tag keys must be between 1 and 128 characters in length.")
    env.store.change_queue(store_name, lambda info: replace(
        info, tags={k: v for k, v in info.tags.items() if k not in keys}))
    return {}


def list_queue_tags(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    tags = dict(env.queue(store_name).tags)
    return {"Tags": tags} if tags else {}


def dead_letter_sources(env: Env, dlq_store_name: str) -> list[str]:
    """Store names of this account/region's queues whose RedrivePolicy targets ``dlq_store_name``."""
    sources = []
    for name in env.store.list_queues(prefix=env.caller.store_prefix()):
        try:
            info = env.store.get_queue(name)
        except Exception:  # deleted while listing
            continue
        if info.config.dead_letter is not None and info.config.dead_letter.queue == dlq_store_name:
            sources.append(name)
    return sorted(sources)


def list_dead_letter_source_queues(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    env.queue(store_name)
    page, token = _page([queue_name_of(n) for n in dead_letter_sources(env, store_name)
                         if env.may("get_status", n)], p)
    result: dict[str, Any] = {"queueUrls": [env.caller.url(n) for n in page]}
    if token:
        result["NextToken"] = token
    return result


def _policy(env: Env, store_name: str, extra: Mapping[str, str]) -> dict[str, Any]:
    text = extra.get("Policy")
    if text:
        parsed: dict[str, Any] = json.loads(text)
        parsed.setdefault("Statement", [])
        return parsed
    arn = env.caller.arn(queue_name_of(store_name))
    return {"Version": "2008-10-17", "Id": f"{arn}/SQSDefaultPolicy", "Statement": []}  # AWS's, as recorded


def add_permission(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    label = required_str(p, "Label")
    accounts = string_list(p, "AWSAccountIds")
    actions = string_list(p, "Actions")
    env.queue(store_name)
    if not _LABEL.match(label):
        raise InvalidParameterValue(f"Value {label} for parameter Label is invalid. Reason: Must match "
                                    "[A-Za-z0-9_-]{1,80}.")
    if not actions:
        raise MissingParameter("Actions")
    if not accounts or not all(_ACCOUNT.match(a) for a in accounts):
        raise InvalidParameterValue(f"Value {accounts} for parameter PrincipalId is invalid. Reason: Unable to verify.")
    if len(actions) > 7:
        raise OverLimit(f"{len(actions)} Actions were found, maximum allowed is 7.")
    for action in actions:
        if action not in PERMISSION_ACTIONS:
            raise InvalidParameterValue(f"Value SQS:{action} for parameter ActionName is invalid. "
                                        "Reason: Only the queue owner is allowed to invoke this action.")
    principals = [f"arn:aws:iam::{a}:root" for a in accounts]
    sqs_actions = [f"SQS:{a}" for a in actions]

    def add(policy: dict[str, Any]) -> None:
        if any(s.get("Sid") == label for s in policy["Statement"]):
            raise InvalidParameterValue(f"Value {label} for parameter Label is invalid. Reason: Already exists.")
        policy["Statement"].append({
            "Sid": label, "Effect": "Allow",
            "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
            "Action": sqs_actions[0] if len(sqs_actions) == 1 else sqs_actions,
            "Resource": env.caller.arn(queue_name_of(store_name)),
        })
    return _change_policy(env, store_name, add)


def remove_permission(env: Env, p: Mapping[str, Any]) -> dict[str, Any]:
    store_name = env.caller.queue_from_url(required_str(p, "QueueUrl"))
    label = required_str(p, "Label")
    env.queue(store_name)

    def remove(policy: dict[str, Any]) -> None:
        kept = [s for s in policy["Statement"] if s.get("Sid") != label]
        if len(kept) == len(policy["Statement"]):
            raise InvalidParameterValue(f"Value {label} for parameter Label is invalid. "
                                        "Reason: can't find label.")
        policy["Statement"] = kept
    return _change_policy(env, store_name, remove)


def _change_policy(env: Env, store_name: str, edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Edit the queue's policy as it is when the change is made (another change at the same moment
    is kept, see ``QueueStore.change_queue``); ``edit`` raises to refuse."""

    def change(info: QueueInfo) -> QueueInfo:
        policy = _policy(env, store_name, info.config.extra)
        edit(policy)
        text = json.dumps(policy) if policy["Statement"] else ""
        return replace(info, config=attributes.apply({"Policy": text}, info.config, info.kind, store_name, env.dead_letter_queue))
    env.store.change_queue(store_name, change)
    return {}
