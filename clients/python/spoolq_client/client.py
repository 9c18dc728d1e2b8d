"""``SpoolqClient``: the verbs of the EmoDB door as plain typed methods over the generated client.

The generated functions (``spoolq_client._generated.api.*``) return ``Response`` objects whose
``parsed`` value is a union of every documented answer. This wrapper calls ``sync_detailed``,
returns the success value, and raises :mod:`spoolq_client.errors` for everything else, so code
on top (the Consumer, the Producer, the ``spoolq`` CLI) reads like the verbs::

    with SpoolqClient("http://127.0.0.1:8480", api_key="...") as sq:
        sq.send("jobs", {"task": "resize"})
        for m in sq.poll("jobs", limit=10, ttl=30, wait=5):
            ...
            sq.ack("jobs", [m.id])

``dedup=True`` on any queue verb uses the ``/dedupq/1`` door instead of ``/queue/1``. The
generated client stays reachable as ``SpoolqClient.generated`` (an ``AuthenticatedClient``).

The console's API (``/console/api``) gives what the EmoDB door lacks, for queues of every door
addressed by their store name: which queues a typed name stands for (:meth:`resolve`), a send with
a FIFO group, deduplication id and attributes (:meth:`send_message`), receive with receipts,
release, nack, visibility, deleting queues and messages, redrive, moves, the node and the rates.
``verify`` is httpx's: ``True`` (the system's trust store), a CA bundle's path, or ``False``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType, SimpleNamespace, TracebackType
from typing import Any, cast

import httpx

from spoolq_client._generated.api.console_api import (
    console_cancel,
    console_create,
    console_delete,
    console_delete_empty,
    console_delete_message,
    console_move,
    console_nack,
    console_names,
    console_queue,
    console_queues,
    console_rates,
    console_receive,
    console_redrive,
    console_release,
    console_send,
    console_server,
    console_session,
    console_visibility,
)
from spoolq_client._generated.api.dedupq import (
    dedup_ack,
    dedup_claim_count,
    dedup_get_settings,
    dedup_move,
    dedup_move_status,
    dedup_peek,
    dedup_poll,
    dedup_purge,
    dedup_renew,
    dedup_send,
    dedup_send_batch,
    dedup_send_batches,
    dedup_size,
    dedup_unclaim_all,
    dedup_update_settings,
)
from spoolq_client._generated.api.ops import healthz
from spoolq_client._generated.api.queue import (
    ack,
    claim_count,
    get_settings,
    list_queues,
    move,
    move_status,
    peek,
    poll,
    purge,
    renew,
    send,
    send_batch,
    send_batches,
    size,
    unclaim_all,
    update_settings,
)
from spoolq_client._generated.client import AuthenticatedClient
from spoolq_client._generated.models import (
    ConsoleConfirmBody,
    ConsoleCreateBody,
    ConsoleDeleteEmptyBody,
    ConsoleMoveBody,
    ConsoleReceiptsBody,
    ConsoleReceiveBody,
    ConsoleSendBody,
    ConsoleVisibilityBody,
    DedupSendBatchesBody,
    Message,
    MoveRef,
    MoveStatus,
    QueueSettings,
    QueueSettingsChange,
    QueueSummary,
    SendBatchesBody,
)
from spoolq_client._generated.types import UNSET, Response
from spoolq_client.errors import error_for

API_KEY_HEADER = "X-BV-API-Key"
#: the kinds of queue (``spoolq create --kind``)
KINDS = ("emodb", "dedup", "sqs", "sqs-fifo", "mq", "disque")
#: the settings ``update_settings`` may change
SETTING_NAMES = ("visibility_timeout", "delay", "retention", "receive_wait", "max_message_bytes", "dead_letter",
                 "archive", "archive_retention")

_DOORS = {
    False: SimpleNamespace(send=send, send_batch=send_batch, send_batches=send_batches, poll=poll, peek=peek,
                           renew=renew, ack=ack, size=size, claim_count=claim_count, purge=purge,
                           unclaim_all=unclaim_all, move=move, move_status=move_status,
                           get_settings=get_settings, update_settings=update_settings),
    True: SimpleNamespace(send=dedup_send, send_batch=dedup_send_batch, send_batches=dedup_send_batches,
                          poll=dedup_poll, peek=dedup_peek, renew=dedup_renew, ack=dedup_ack, size=dedup_size,
                          claim_count=dedup_claim_count, purge=dedup_purge, unclaim_all=dedup_unclaim_all,
                          move=dedup_move, move_status=dedup_move_status,
                          get_settings=dedup_get_settings, update_settings=dedup_update_settings),
}


def _opt(value: Any) -> Any:
    return UNSET if value is None else value


def _message_of(response: Response[Any]) -> str:
    """The server's one-line explanation from an error body (text, or JSON ``message``/``reason``)."""
    text = response.content.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text.splitlines()[0] if text else ""
    if isinstance(body, dict):
        for key in ("message", "reason"):
            if isinstance(body.get(key), str):
                return str(body[key])
        if isinstance(body.get("queue"), str):
            return f"not authorized to post to queue {body['queue']!r}"
        if isinstance(body.get("errors"), list):
            return "; ".join(str(e) for e in body["errors"]) or "invalid request body"
    return text


def _retry_after(response: Response[Any]) -> float | None:
    raw = response.headers.get("Retry-After")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


class SpoolqClient:
    """The EmoDB verbs over HTTP (thread-safe: one pooled ``httpx.Client`` shared by all threads)."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 60.0,
                 max_connections: int = 64, verify: bool | str = True) -> None:
        self.base_url = base_url.rstrip("/")
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self.generated = AuthenticatedClient(
            base_url=self.base_url, token=api_key or "", prefix="", auth_header_name=API_KEY_HEADER,
            timeout=httpx.Timeout(timeout), httpx_args={"limits": limits}, verify_ssl=verify)
        # Build the pooled httpx client now: built lazily, threads starting together would each
        # build one (and load the TLS trust store each time).
        self.generated.get_httpx_client()

    # --- plumbing -----------------------------------------------------------------------

    def _door(self, dedup: bool) -> Any:
        return _DOORS[dedup]

    def _ok(self, response: Response[Any], *ok: int) -> Any:
        if int(response.status_code) in (ok or (200,)):
            return response.parsed
        raise error_for(int(response.status_code), _message_of(response), _retry_after(response))

    def _call(self, op: ModuleType, *args: Any, **kwargs: Any) -> Any:
        kwargs = {k: _opt(v) for k, v in kwargs.items()}
        return self._ok(op.sync_detailed(*args, client=self.generated, **kwargs))

    def close(self) -> None:
        self.generated.get_httpx_client().close()

    def __enter__(self) -> SpoolqClient:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- verbs --------------------------------------------------------------------------

    def send(self, queue: str, payload: Any, *, dedup: bool = False, delay: float | None = None,
             ttl: float | None = None, at_most_once: bool = False) -> None:
        """Send one JSON value (durably stored when this returns)."""
        self._call(self._door(dedup).send, queue, body=payload, delay=delay, ttl=ttl,
                   at_most_once="true" if at_most_once else None)

    def send_batch(self, queue: str, payloads: Sequence[Any], *, dedup: bool = False, delay: float | None = None,
                   ttl: float | None = None, at_most_once: bool = False) -> None:
        """Send several JSON values to one queue, all or nothing."""
        self._call(self._door(dedup).send_batch, queue, body=list(payloads), delay=delay, ttl=ttl,
                   at_most_once="true" if at_most_once else None)

    def send_batches(self, batches: Mapping[str, Sequence[Any]], *, dedup: bool = False) -> None:
        """Send to several queues at once, all or nothing."""
        door = self._door(dedup)
        body = (DedupSendBatchesBody if dedup else SendBatchesBody).from_dict(
            {q: list(p) for q, p in batches.items()})
        self._call(door.send_batches, body=body)

    def poll(self, queue: str, *, limit: int = 10, ttl: int | None = None, wait: float | None = None,
             dedup: bool = False) -> list[Message]:
        """Claim up to ``limit`` messages for ``ttl`` seconds (default: the queue's visibility timeout);
        ``wait`` long-polls (0-20 s). Each message carries ``sent_at`` (epoch seconds) and
        ``receive_count`` (its deliveries so far to any consumer, this one included): the door's
        ``meta=true``."""
        return cast(list[Message], self._call(self._door(dedup).poll, queue, limit=limit, ttl=ttl, wait=wait,
                                              meta="true"))

    def peek(self, queue: str, *, limit: int = 10, dedup: bool = False) -> list[Message]:
        """Up to ``limit`` messages without claiming them."""
        return cast(list[Message], self._call(self._door(dedup).peek, queue, limit=limit))

    def renew(self, queue: str, ids: Iterable[str], ttl: int = 30, *, dedup: bool = False) -> None:
        """Extend claims to at least ``ttl`` seconds from now (``ttl=0`` releases them)."""
        self._call(self._door(dedup).renew, queue, body=list(ids), ttl=ttl)

    def release(self, queue: str, ids: Iterable[str], *, dedup: bool = False) -> None:
        """Give claimed messages back at once (renew with ttl=0)."""
        self.renew(queue, ids, 0, dedup=dedup)

    def ack(self, queue: str, ids: Iterable[str], *, dedup: bool = False) -> None:
        """Acknowledge (delete) messages; unknown or already acknowledged ids are ignored."""
        self._call(self._door(dedup).ack, queue, body=list(ids))

    def size(self, queue: str, *, limit: int | None = None, dedup: bool = False) -> int:
        """Messages in the queue: exact up to ``limit``, estimated beyond."""
        return int(self._call(self._door(dedup).size, queue, limit=limit))

    def claim_count(self, queue: str, *, dedup: bool = False) -> int:
        return int(self._call(self._door(dedup).claim_count, queue))

    def purge(self, queue: str, *, dedup: bool = False) -> None:
        self._call(self._door(dedup).purge, queue)

    def unclaim_all(self, queue: str, *, dedup: bool = False) -> None:
        self._call(self._door(dedup).unclaim_all, queue)

    def move(self, source: str, destination: str, *, dedup: bool = False) -> str:
        """Start moving every message of ``source`` to ``destination``; returns the move reference."""
        ref: MoveRef = self._call(self._door(dedup).move, from_=source, to=destination)
        return ref.id

    def move_status(self, ref: str, *, dedup: bool = False) -> MoveStatus:
        return cast(MoveStatus, self._call(self._door(dedup).move_status, ref))

    def settings(self, queue: str, *, dedup: bool = False) -> QueueSettings:
        """A queue's settings (visibility timeout, delay, retention, dead-letter queue, archive, ...)."""
        return cast(QueueSettings, self._call(self._door(dedup).get_settings, queue))

    def update_settings(self, queue: str, changes: Mapping[str, Any], *, dedup: bool = False) -> QueueSettings:
        """Change the settings ``changes`` names (``{"archive": True, "archive_retention": 2592000}``;
        ``"dead_letter": {"queue": ..., "max_receives": ...}`` or ``None``); returns every setting after
        the change. Nothing changes unless every value is accepted."""
        known = set(SETTING_NAMES)
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown setting {unknown[0]!r}: the settings are {', '.join(SETTING_NAMES)}")
        body = QueueSettingsChange.from_dict(dict(changes))
        return cast(QueueSettings, self._call(self._door(dedup).update_settings, queue, body=body))

    def create_queue(self, name: str, *, door: str = "queue", fifo: bool = False, region: str | None = None,
                     content_based_dedup: bool = False, settings: Mapping[str, Any] | None = None,
                     tags: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Create the queue ``door`` (queue, dedupq, sqs, mq, disque; or a kind: emodb, dedup, sqs,
        sqs-fifo, mq, disque) knows as ``name``, with
        ``settings`` (as :meth:`update_settings` takes them) and ``tags`` from the start; every value is
        checked before the queue is made. Returns ``{"store_name", "door", "name", "kind"}``; a
        :class:`~spoolq_client.errors.SpoolqApiError` with status 409 if it exists already."""
        unknown = sorted(set(settings or {}) - set(SETTING_NAMES))
        if unknown:
            raise ValueError(f"unknown setting {unknown[0]!r}: the settings are {', '.join(SETTING_NAMES)}")
        body: dict[str, Any] = {"door": door, "name": name, "fifo": fifo, "content_based_dedup": content_based_dedup,
                                "region": region}
        if door in KINDS:  # a kind (emodb, sqs-fifo, ...) names the door and the FIFO-ness
            body = {"kind": door, "name": name, "content_based_dedup": content_based_dedup, "region": region}
        if settings:
            body["settings"] = dict(settings)
        if tags:
            body["tags"] = dict(tags)
        created = self._call(console_create, body=ConsoleCreateBody.from_dict(body))
        return cast(dict[str, Any], created.to_dict())

    def list_queues(self, *, prefix: str | None = None, limit: int | None = None) -> list[QueueSummary]:
        """Every queue the key may ``get_status``, with ready / claimed / delayed counts."""
        return cast(list[QueueSummary], self._call(list_queues, prefix=prefix, limit=limit))

    # --- the console's API: any door's queue, by store name -------------------------------------

    def resolve(self, name: str) -> list[dict[str, Any]]:
        """The queues ``name`` (as users type it: a door's name, a store name, an SQS queue URL)
        stands for, that the key may see: ``[{"store_name", "door", "name", "kind"}]``."""
        return cast(list[dict[str, Any]], self._call(console_names, name=name).to_dict()["queues"])

    def send_message(self, queue: str, body: str, *, text: bool = False, group_id: str | None = None,
                     dedup_id: str | None = None, attributes: Mapping[str, str] | None = None,
                     delay: int | None = None) -> str:
        """Send one message to any door's queue (its store name): ``body`` is JSON unless ``text``;
        a FIFO queue's group and deduplication ids; string attributes. Returns the message id."""
        raw: dict[str, Any] = {"body": body, "format": "text" if text else "json", "group_id": group_id,
                               "dedup_id": dedup_id, "delay": delay}
        if attributes:
            raw["attributes"] = dict(attributes)
        return str(self._call(console_send, queue, body=ConsoleSendBody.from_dict(raw)).id)

    def receive(self, queue: str, *, limit: int = 1, visibility_timeout: int | None = None) -> list[dict[str, Any]]:
        """Claim up to ``limit`` (1-10) messages of any door's queue, each with its ``receipt``."""
        body = ConsoleReceiveBody.from_dict({"limit": limit, "visibility_timeout": visibility_timeout})
        return cast(list[dict[str, Any]], self._call(console_receive, queue, body=body).to_dict()["messages"])

    def _receipts(self, op: ModuleType, queue: str, receipts: Iterable[str]) -> list[bool]:
        done = self._call(op, queue, body=ConsoleReceiptsBody.from_dict({"receipts": list(receipts)}))
        return [bool(d) for d in done.done]

    def release_receipts(self, queue: str, receipts: Iterable[str]) -> list[bool]:
        """Make received messages visible again now (receipts or message ids); per one: whether it was."""
        return self._receipts(console_release, queue, receipts)

    def nack(self, queue: str, receipts: Iterable[str]) -> list[bool]:
        """Give received messages back as Disque's NACK does: visible now, their nack count up."""
        return self._receipts(console_nack, queue, receipts)

    def change_visibility(self, queue: str, receipts: Iterable[str], seconds: int) -> list[bool]:
        """Claims last ``seconds`` from now (0: visible again now), as SQS's ChangeMessageVisibility."""
        body = ConsoleVisibilityBody.from_dict({"receipts": list(receipts), "visibility_timeout": seconds})
        return [bool(d) for d in self._call(console_visibility, queue, body=body).done]

    def delete_message(self, queue: str, message_id: str) -> None:
        """Delete one message by id (a Disque job id on a Disque queue), claimed or not."""
        self._call(console_delete_message, queue, message_id)

    def queue_info(self, queue: str) -> dict[str, Any]:
        """One queue of any door: counts, kind, settings, tags, consumers, moves."""
        return cast(dict[str, Any], self._call(console_queue, queue).to_dict())

    def overview(self) -> dict[str, Any]:
        """Every queue the key may see, as the console lists them, and the moves."""
        return cast(dict[str, Any], self._call(console_queues).to_dict())

    def delete_queue(self, queue: str, *, if_empty: bool = False) -> dict[str, list[str]]:
        """Delete a queue and its messages (``if_empty``: only if it holds none). Returns
        ``{"deleted", "not_empty", "missing"}``."""
        if if_empty:
            body = ConsoleDeleteEmptyBody.from_dict({"queues": [queue]})
            return cast(dict[str, list[str]], self._call(console_delete_empty, body=body).to_dict())
        shown = str(self.queue_info(queue)["name"])
        self._call(console_delete, queue, body=ConsoleConfirmBody.from_dict({"confirm": shown}))
        return {"deleted": [queue], "not_empty": [], "missing": []}

    def start_move(self, queue: str, destination: str | None, *, redrive: bool = False,
                   max_per_second: int | None = None) -> dict[str, Any]:
        """Start moving every message of ``queue`` (``redrive``: a dead-letter queue's back to its
        source, ``destination`` by default); the move as the console shows it."""
        body = ConsoleMoveBody.from_dict({"to": destination, "max_per_second": max_per_second})
        return cast(dict[str, Any], self._call(console_redrive if redrive else console_move, queue, body=body).to_dict())

    def cancel_move(self, ref: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._call(console_cancel, ref).to_dict())

    def node(self) -> dict[str, Any]:
        """The node: version, root, free space, flush mode and latency, workers."""
        return cast(dict[str, Any], self._call(console_server).to_dict())

    def whoami(self) -> dict[str, Any]:
        """Who the key is: ``{"open", "principal", "version", "node"}``."""
        return cast(dict[str, Any], self._call(console_session).to_dict())

    def rates(self, *, window: int = 600, queue: str | None = None) -> dict[str, Any]:
        """Messages per second of each queue over ``window`` seconds (the server's history)."""
        return cast(dict[str, Any], self._call(console_rates, window=window, queue=queue).to_dict())

    def healthy(self) -> bool:
        response = healthz.sync_detailed(client=self.generated)
        return int(response.status_code) == 200

