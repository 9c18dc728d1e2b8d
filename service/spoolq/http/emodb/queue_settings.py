"""The EmoDB door's settings extensions: ``/queue/1/{q}/_settings`` and ``archive=`` on sends.

A queue's settings are :mod:`spoolq.queue_settings`'s JSON. ``GET`` needs ``get_status``; a change
needs what a purge needs (``poll``; ``admin`` too on an SQS queue; the view checks that) and ``post``
on a dead-letter queue it names anew (it sends messages there, as a move would:
:func:`spoolq.auth.may_send_into`, asked before the queue is looked up, so a 403 never tells
whether another team's queue exists). A change never creates a queue (404).

``archive=true|false`` on send, sendbatch and _sendbatch names the archive setting the queues must
have: a queue the send creates is created with it, a queue that exists with the other setting is a
400 and nothing is sent (a setting changes through ``_settings``, never as a side effect of a send).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from spoolq import queue_settings
from spoolq.auth import Principal, may_send_into
from spoolq.errors import QueueNotFound
from spoolq.http.emodb import wire
from spoolq.store.contract import QueueStore
from spoolq.store.model import QueueInfo, QueueKind, is_queue_name


def _info(store: QueueStore, name: str) -> QueueInfo:
    try:
        return store.get_queue(name)
    except QueueNotFound:
        raise wire.json_error(404, {"message": f"queue {name!r} does not exist"}) from None


def _dumps(info: QueueInfo) -> str:
    return json.dumps(queue_settings.settings_of(info), separators=(",", ":"))


def settings_json(store: QueueStore, name: str) -> str:
    return _dumps(_info(store, name))


def change_settings(store: QueueStore, who: Principal, name: str, changes: Any) -> str:
    """Apply ``changes`` (checked first, all of them) and answer every setting after the change.
    The change is made to the settings as they are at that moment (``QueueStore.change_queue``):
    another change of other settings at the same moment is kept."""
    _info(store, name)

    def change(info: QueueInfo) -> QueueInfo:
        def lookup(target: str) -> QueueInfo | None:  # the dead-letter queue named
            kept = info.config.dead_letter is not None and info.config.dead_letter.queue == target
            if not kept and not may_send_into(who, target):
                raise wire.not_authorized()
            if not is_queue_name(target):
                return None
            try:
                return store.get_queue(target)
            except QueueNotFound:
                return None
        return replace(info, config=queue_settings.changed_config(info, changes, lookup))
    try:
        return _dumps(store.change_queue(name, change))
    except QueueNotFound:
        raise wire.json_error(404, {"message": f"queue {name!r} does not exist"}) from None


def prepare_archive(store: QueueStore, names: Iterable[str], archive: bool | None, kind: QueueKind,
                    door: str) -> Callable[[], None]:
    """Check ``archive=`` against every queue a send goes to before anything is written (400 for a
    queue that exists with the other setting); returns what creates the missing ones with it."""
    if archive is None:
        return lambda: None
    missing = []
    for name in names:
        try:
            info = store.get_queue(name)
        except QueueNotFound:
            missing.append(name)
            continue
        if info.config.archive != archive:
            shown = name.removeprefix(wire.DEDUP_STORE_PREFIX)
            raise wire.illegal_argument(
                f"Queue {shown} exists with its archive {'on' if info.config.archive else 'off'}; "
                f"change it with POST /{door}/1/{shown}/_settings")

    def create() -> None:
        for name in missing:
            made = store.create_queue(name, kind)
            if made.config.archive != archive:
                store.change_queue(name, lambda info: replace(info, config=replace(info.config, archive=archive)))
    return create
