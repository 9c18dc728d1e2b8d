"""Creating and deleting queues from the console, as the door that owns the queue would.

A queue is created with the name rule, the store name and the permission of its door, so it is
reachable there exactly like one that door made:

===========  ===============================  =========================  ============  ==========
door         name rule                        store name                 kind          permission
===========  ===============================  =========================  ============  ==========
``queue``    EmoDB's (lowercase, 1-255)       ``<name>``                 standard      ``post``
``dedupq``   EmoDB's                          ``__dedupq:<name>``        dedup         ``post``
``sqs``      SQS's (``.fifo`` for FIFO)       ``sqs:<acct>:<region>:<n>``  standard/fifo  ``admin``
``mq``       MQ's (1-255 of A-Z a-z 0-9 ...)  ``mq:<name>``              standard      ``post``
``disque``   the store's                      ``disque:<name>``          standard      ``post``
===========  ===============================  =========================  ============  ==========

A queue is named by its kind (``emodb``, ``dedup``, ``sqs``, ``sqs-fifo``, ``mq``, ``disque``:
:data:`~spoolq.queues.names.KINDS`), or by its door and ``fifo``. It starts from the same defaults
as a queue its door makes (:func:`~spoolq.queues.queue_settings.door_defaults`: an SQS queue keeps its
messages 4 days, as ``CreateQueue`` gives it).

(EmoDB and Disque make a queue on its first send, hence ``post``; MQ's ``PUT`` asks ``post``; SQS's
``CreateQueue`` asks ``admin``.) Deleting asks what purging asks (:func:`~spoolq.http.overview.
manage_action`: ``admin`` on SQS queues, as ``DeleteQueue`` does, ``poll`` elsewhere, as MQ's
``DELETE`` does) and the name typed to confirm. "Delete empty queues" deletes each named queue
only if it holds no message at that moment (``delete_queue(if_empty=True)``: a message sent
meanwhile keeps its queue); every queue is authorised before any is touched, so one refusal
changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flask import Response

from spoolq.errors import InvalidArgument, QueueAlreadyExists, QueueNotEmpty, QueueNotFound
from spoolq.http.console import schemas as cs
from spoolq.http.console.base import DOOR_NAMES, ConsoleApi, ConsoleError, json_response
from spoolq.queues.names import KINDS, NAME_RULES, door_and_name, door_store_name, manage_action, user_kind
from spoolq.queues.queue_settings import SettingRefused, changed_config, door_defaults
from spoolq.store.contract import QueueStore
from spoolq.store.model import QueueConfig, QueueInfo, QueueKind, check_queue_name

_REGION = re.compile(r"[a-z]{2}(-[a-z0-9]+){1,3}")


def new_queue(api: ConsoleApi, door: str, name: str, fifo: bool, content_based_dedup: bool,
              region: str | None) -> tuple[str, QueueKind, QueueConfig]:
    """(store name, kind, config) of the queue ``door`` would make as ``name``; 400 if it would not."""
    settings = api.services.settings
    if door == "sqs":
        region = region or settings.sqs_region
        if not _REGION.fullmatch(region):
            raise ConsoleError(400, f"{region!r} is not an AWS region name (like us-east-1)")
    store_name = door_store_name(door, name, account=settings.sqs_account_id, region=region or "")
    if store_name is None or (door == "sqs" and name.endswith(".fifo") != fifo):
        raise ConsoleError(400, f"{name!r} is not a {DOOR_NAMES[door]} queue name: {NAME_RULES[door]}")
    kind = {"dedupq": QueueKind.DEDUP}.get(door, QueueKind.FIFO if fifo else QueueKind.STANDARD)
    if (fifo or content_based_dedup) and door != "sqs":
        raise ConsoleError(400, "FIFO and content-based deduplication are SQS queue settings")
    if content_based_dedup and not fifo:
        raise ConsoleError(400, "content-based deduplication is for FIFO queues")
    base = door_defaults(door, api.services.store().default_config)
    return store_name, kind, replace(base, content_based_dedup=True) if content_based_dedup else base


def door_and_fifo(data: dict[str, Any]) -> tuple[str, bool]:
    """The door and FIFO-ness a create body names: by ``kind``, or by ``door`` and ``fifo``."""
    kind, door = data.get("kind"), data.get("door")
    if kind is None:
        if door is None:
            raise ConsoleError(400, f"name the kind of queue: {', '.join(KINDS)}")
        return door, bool(data["fifo"])
    named_door, fifo = KINDS[kind]
    if (door is not None and door != named_door) or (data["fifo"] and not fifo):
        raise ConsoleError(400, f"kind {kind} is not door {door} with fifo {str(data['fifo']).lower()}: "
                                "name the kind alone")
    return named_door, fifo

def create_action(store_name: str) -> str:
    return "admin" if door_and_name(store_name)[0] == "sqs" else "post"


def create(api: ConsoleApi) -> Response:
    who = api.principal()
    data = api.body(cs.ConsoleCreateBodySchema())
    door, fifo = door_and_fifo(data)
    store_name, kind, config = new_queue(api, door, data["name"], fifo, data["content_based_dedup"],
                                         data.get("region"))
    api.require(who, create_action(store_name), store_name, doing="create")
    store = api.services.store()
    if data.get("settings"):
        def may_dead_letter_into(target: str) -> None:
            api.require_send_into(who, target, "dead-letter into")
        config = _with_settings(store, store_name, kind, config, data["settings"],
                                may_dead_letter_into)
    try:
        store.create_queue(store_name, kind, config, data.get("tags"), exist_ok=False)
    except QueueAlreadyExists:
        raise ConsoleError(409, f"the {DOOR_NAMES[door]} queue {data['name']!r} already exists") from None
    api.services.overview.invalidate()
    return json_response({"store_name": store_name, "door": door, "name": data["name"],
                          "kind": user_kind(store_name, kind.value)},
                         cs.ConsoleCreatedSchema())


def _with_settings(store: QueueStore, store_name: str, kind: QueueKind, base: QueueConfig,
                   settings: dict[str, Any], authorize: Callable[[str], None]) -> QueueConfig:
    """``base`` with ``settings`` (the settings API's names), every one checked first (400); a
    dead-letter queue is ``authorize``d (403) before it is looked up."""
    def lookup(name: str) -> QueueInfo | None:
        authorize(name)
        try:
            return store.get_queue(check_queue_name(name))
        except (QueueNotFound, InvalidArgument):
            return None

    try:
        return changed_config(QueueInfo(store_name, kind, base, {}, 0.0, 0.0), settings, lookup)
    except SettingRefused as e:
        raise ConsoleError(400, str(e)) from None


def delete(api: ConsoleApi, name: str) -> Response:
    who = api.principal()
    api.require(who, manage_action(name), name, doing="delete")
    api.existing(name)
    typed = api.body(cs.ConsoleConfirmBodySchema())["confirm"]
    if typed != door_and_name(name)[1]:
        raise ConsoleError(400, "type the queue's name to confirm the deletion")
    try:
        api.services.store().delete_queue(name)
    except QueueNotFound:
        raise ConsoleError(404, f"no queue {door_and_name(name)[1]!r}") from None
    api.services.overview.invalidate()
    return json_response({"ok": True}, cs.ConsoleOkSchema())


def delete_empty(api: ConsoleApi) -> Response:
    who = api.principal()
    names: list[str] = api.body(cs.ConsoleDeleteEmptyBodySchema())["queues"]
    for name in names:  # every one first: a refusal changes nothing
        check_queue_name(name)
        api.require(who, manage_action(name), name, doing="delete")
    out: dict[str, list[Any]] = {"deleted": [], "not_empty": [], "missing": []}
    store = api.services.store()
    for name in dict.fromkeys(names):
        try:
            store.delete_queue(name, if_empty=True)
            out["deleted"].append(name)
        except QueueNotEmpty:
            out["not_empty"].append(name)
        except QueueNotFound:
            out["missing"].append(name)
    api.services.overview.invalidate()
    return json_response(out, cs.ConsoleDeleteEmptySchema())
