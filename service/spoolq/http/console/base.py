"""What every view of the console's JSON API shares: the key, permissions, bodies, rows.

See :mod:`spoolq.http.console.api` for the API itself and the permission each call needs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from flask import Response, request
from marshmallow import Schema, ValidationError

from spoolq.access.auth import SECOND_QUEUE_PERMISSION, Principal, may_send_into
from spoolq.errors import QueueNotFound
from spoolq.http import apidoc
from spoolq.http.console import schemas as cs
from spoolq.http.context import Services
from spoolq.http.overview import COUNT_LIMIT, QueueRow
from spoolq.queues.names import ambiguity, door_and_name, manage_action, permission_name, resolve, user_kind
from spoolq.store.model import MoveState, MoveStatus, QueueInfo

#: the console's lists may be this old (seconds; the cached overview)
LIST_MAX_AGE = 1.0
DOOR_NAMES = {"queue": "EmoDB", "dedupq": "EmoDB dedup", "sqs": "SQS", "mq": "MQ", "disque": "Disque"}


class ConsoleError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_response(value: Mapping[str, Any], schema: Schema, status: int = 200) -> Response:
    return Response(schema.dumps(value), status=status, mimetype="application/json")


def errors_doc(*codes: int) -> dict[str, Any]:
    """The OpenAPI responses of these error statuses."""
    text = {400: "invalid input", 401: "an API key is required (or the key is unknown)",
            403: "the key may not do this", 404: "no such queue, message or move",
            409: "the queue exists already, or is not empty", 503: "storage unavailable; retry"}
    return {str(c): {"description": text[c], "content": apidoc.json_content(cs.ConsoleErrorSchema)}
            for c in codes}


class ConsoleApi:
    def __init__(self, services: Services) -> None:
        self.services = services

    # --- request pieces -------------------------------------------------------------------

    def principal(self) -> Principal:
        who = self.services.auth.principal(request.headers.get("X-BV-API-Key"), None)
        if who is None:
            raise ConsoleError(401, "an API key is required" if not request.headers.get("X-BV-API-Key")
                               else "this API key is not known")
        return who

    @staticmethod
    def can(who: Principal, store_name: str) -> dict[str, bool]:
        name = permission_name(store_name)
        can = {a: who.can(a, name) for a in ("get_status", "post", "poll")}
        can["manage"] = who.can(manage_action(store_name), name)
        return can

    def require_send_into(self, who: Principal, store_name: str, doing: str) -> None:
        """403 unless ``who`` may make messages arrive in the queue (a move's destination, a
        dead-letter queue: :func:`spoolq.access.auth.may_send_into`); asked before the queue is looked up."""
        if not may_send_into(who, store_name):
            door, name = door_and_name(store_name)
            raise ConsoleError(403, f"this key may not {doing} the {DOOR_NAMES[door]} queue {name!r} "
                                    f"(that needs {SECOND_QUEUE_PERMISSION})")

    def require(self, who: Principal, action: str, store_name: str, doing: str | None = None) -> None:
        """403 unless ``who`` holds ``action`` on the queue; ``doing`` names what was asked when
        it is not the permission's own word (``delete`` needs ``poll``, or ``admin`` on SQS)."""
        if not who.can(action, permission_name(store_name)):
            door, name = door_and_name(store_name)
            what = f"{doing} the {DOOR_NAMES[door]} queue {name!r} (that needs {action})" if doing \
                else f"{action} on the {DOOR_NAMES[door]} queue {name!r}"
            raise ConsoleError(403, f"this key may not {what}")

    def body(self, schema: Schema) -> dict[str, Any]:
        raw = request.get_json(silent=True)
        if not isinstance(raw, dict):
            raise ConsoleError(400, "the body must be a JSON object")
        try:
            loaded: dict[str, Any] = schema.load(raw)
        except ValidationError as e:
            raise ConsoleError(400, f"invalid body: {e.messages}") from None
        return loaded

    def resolved(self, typed: str) -> str:
        """The store name of the queue ``typed`` names as a user types it (:func:`spoolq.queues.names.
        resolve`): itself when no queue answers to it (the view then says it does not exist), 400
        naming the matches when several do."""
        store = self.services.store()

        def exists(name: str) -> bool:
            try:
                store.get_queue(name)
            except QueueNotFound:
                return False
            return True

        settings = self.services.settings
        matches = resolve(typed, exists, account=settings.sqs_account_id, region=settings.sqs_region)
        if len(matches) > 1:
            raise ConsoleError(400, ambiguity(typed, matches))
        return matches[0] if matches else typed

    def existing(self, store_name: str) -> QueueInfo:
        try:
            return self.services.store().get_queue(store_name)
        except QueueNotFound:
            raise ConsoleError(404, f"no queue {door_and_name(store_name)[1]!r}") from None

    def totals(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for labels, value in self.services.metrics.samples("spoolq_queue_messages_total"):
            out.setdefault(labels["queue"], {})[labels["operation"]] = value
        return out

    def consumers(self) -> dict[str, list[dict[str, Any]]]:
        """Per store queue, per door: polls waiting now and the latest poll (from the metrics, so
        every worker and the Disque listener are counted)."""
        metrics = self.services.metrics
        by: dict[tuple[str, str], dict[str, Any]] = {}
        for labels, value in metrics.samples("spoolq_queue_polls_waiting"):
            if value > 0:
                by.setdefault((labels["queue"], labels["door"]), {})["waiting"] = int(value)
        for labels, value in metrics.samples("spoolq_queue_last_poll_time_seconds"):
            if value > 0:
                by.setdefault((labels["queue"], labels["door"]), {})["last_poll_at"] = value
        now = time.time()
        out: dict[str, list[dict[str, Any]]] = {}
        for (queue, door), seen in sorted(by.items()):
            last = seen.get("last_poll_at")
            out.setdefault(queue, []).append({
                "door": door, "waiting": seen.get("waiting", 0), "last_poll_at": last,
                "last_poll_age": None if last is None else round(max(0.0, now - last), 3)})
        return out

    def row(self, row: QueueRow, rows: Mapping[str, QueueRow], totals: Mapping[str, Mapping[str, float]],
            who: Principal, consumers: Mapping[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
        t = totals.get(row.store_name, {})
        doors = list((consumers or {}).get(row.store_name, []))
        ages = [d["last_poll_age"] for d in doors if d["last_poll_age"] is not None]
        dlq = row.config.dead_letter
        dead = None
        if dlq is not None:
            target = rows.get(dlq.queue)
            dead = {"queue": dlq.queue, "max_receives": dlq.max_receives,
                    "messages": target.ready + target.delayed if target else 0}
        return {"store_name": row.store_name, "door": row.door, "name": row.name,
                "kind": user_kind(row.store_name, row.kind),
                "ready": row.ready, "claimed": row.claimed, "delayed": row.delayed, "exact": row.exact,
                "oldest_age": round(row.oldest_age(time.time()), 3), "dead_letter": dead,
                "dead_letter_sources": list(row.dead_letter_sources),
                "totals": {k: t.get(k, 0.0) for k in ("send", "poll", "ack")},
                "consumers": {"waiting": sum(d["waiting"] for d in doors),
                              "last_poll_age": min(ages) if ages else None, "doors": doors},
                "can": self.can(who, row.store_name)}

    def move_json(self, m: MoveStatus) -> dict[str, Any]:
        remaining = 0
        if m.state is MoveState.IN_PROGRESS:
            remaining = self.services.store().counts(m.source, limit=COUNT_LIMIT).total
        return {"ref": m.ref, "source": m.source, "destination": m.destination, "state": m.state.value,
                "moved": m.moved, "remaining": remaining, "started_at": m.started_at,
                "finished_at": m.finished_at, "error": m.error, "max_per_second": m.max_per_second}

    def visible_moves(self, who: Principal, queue: str | None = None) -> list[dict[str, Any]]:
        moves = self.services.store().list_moves()
        shown = [m for m in moves
                 if (queue is None or queue in (m.source, m.destination))
                 and (who.can("get_status", permission_name(m.source))
                      or who.can("get_status", permission_name(m.destination)))]
        shown.sort(key=lambda m: m.started_at, reverse=True)
        return [self.move_json(m) for m in shown[:50]]
