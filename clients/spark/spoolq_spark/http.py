"""The few EmoDB-door calls the connector makes, over httpx, with retries.

Why httpx and not the generated ``spoolq_client``: the writer already holds each payload as JSON
text (validated, or serialised from a struct) and splices it into the request body byte for byte,
and the reader keeps each payload as JSON text; going through the generated models would parse
and re-serialise every message twice. The surface used is small: ``sendbatch`` (with ``delay``/
``ttl``), ``poll``/``peek`` with the ``meta=true`` extension (``sentAt``, ``receiveCount``),
``renew``, ``ack``, ``size``, ``claimcount``, the batch claims (``claimbatch``, ``renewbatches``,
``ackbatches``) and ``/healthz``.

Retries: connection errors, 429 and 5xx are retried with exponential backoff, honouring a
``Retry-After`` header, until ``retry_timeout`` seconds have passed; then, and on every other
non-2xx answer, :class:`SpoolqError` is raised with the status and the service's message. A send
that timed out may have been stored: retrying it can deliver a message twice (at-least-once).

A :class:`Api` holds no connection until its first call, so objects that carry one can be pickled
(Spark pickles readers and writers with cloudpickle); :meth:`Api.__getstate__` drops the client.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from spoolq_spark.options import Options

RETRY_STATUS = frozenset({429, 502, 503, 504})


class SpoolqError(RuntimeError):
    """The service refused a request, or could not be reached within the retry budget."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Api:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self._client: httpx.Client | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "_client": None}

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            headers = {"X-BV-API-Key": self.opts.api_key} if self.opts.api_key else {}
            self._client = httpx.Client(base_url=self.opts.url, headers=headers, timeout=self.opts.timeout)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def queue_path(self, verb: str, queue: str | None = None) -> str:
        return f"{self.opts.door}/{queue or self.opts.queue}/{verb}"

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                content: bytes | None = None) -> httpx.Response:
        deadline = time.monotonic() + self.opts.retry_timeout
        attempt = 0
        headers = {"Content-Type": "application/json"} if content is not None else None
        while True:
            attempt += 1
            wait: float | None = None
            try:
                response = self.client.request(method, path, params=params, content=content, headers=headers)
            except httpx.TransportError as e:
                problem = f"cannot reach spoolq at {self.opts.url} ({type(e).__name__}: {e})"
                status = None
            else:
                if response.status_code < 300:
                    return response
                status = response.status_code
                problem = f"spoolq refused {method} {path} with HTTP {status}: {_message(response)}"
                if status not in RETRY_STATUS:
                    raise SpoolqError(problem, status)
                wait = _retry_after(response)
            if wait is None:
                wait = min(5.0, 0.1 * 2 ** min(attempt, 6)) * (0.5 + random.random() / 2)
            if time.monotonic() + wait > deadline:
                raise SpoolqError(f"{problem} (gave up after {attempt} attempts, retryTimeout="
                                  f"{self.opts.retry_timeout:g}s)", status)
            time.sleep(wait)

    # --- verbs ----------------------------------------------------------------------------

    def health(self) -> None:
        """Raise :class:`SpoolqError` unless ``/healthz`` answers (one short attempt)."""
        try:
            r = self.client.get("/healthz", timeout=min(5.0, self.opts.timeout))
        except httpx.TransportError as e:
            raise SpoolqError(f"cannot reach spoolq at {self.opts.url} ({type(e).__name__}: {e})") from None
        if r.status_code != 200:
            raise SpoolqError(f"{self.opts.url}/healthz answered HTTP {r.status_code}: is this a spoolq service?",
                              r.status_code)

    def send_batch(self, payloads: Sequence[bytes], *, delay: float | None = None, ttl: float | None = None,
                   queue: str | None = None) -> None:
        """Send JSON texts (each one JSON value) in one all-or-nothing request."""
        params: dict[str, Any] = {}
        if delay is not None:
            params["delay"] = repr(float(delay))
        if ttl is not None:
            params["ttl"] = repr(float(ttl))
        body = b"[" + b",".join(payloads) + b"]"
        self.request("POST", self.queue_path("sendbatch", queue), params=params, content=body)

    def poll(self, limit: int, ttl: int) -> list[dict[str, Any]]:
        r = self.request("GET", self.queue_path("poll"), params={"limit": limit, "ttl": ttl, "meta": "true"})
        out: list[dict[str, Any]] = r.json()
        return out

    def peek(self, limit: int) -> list[dict[str, Any]]:
        r = self.request("GET", self.queue_path("peek"), params={"limit": limit, "meta": "true"})
        out: list[dict[str, Any]] = r.json()
        return out

    def renew(self, ids: Iterable[str], ttl: int) -> None:
        for chunk in _chunks(list(ids), 1000):
            self.request("POST", self.queue_path("renew"), params={"ttl": ttl}, content=_ids(chunk))

    def ack(self, ids: Iterable[str], queue: str | None = None) -> None:
        for chunk in _chunks(list(ids), 1000):
            self.request("POST", self.queue_path("ack", queue), content=_ids(chunk))

    def size(self, limit: int | None = None) -> int:
        params = {"limit": limit} if limit is not None else None
        return int(self.request("GET", self.queue_path("size"), params=params).json())

    def any_ready(self) -> bool:
        """Whether an unclaimed message is visible now (``poll?ttl=0``: EmoDB's look without a claim)."""
        r = self.request("GET", self.queue_path("poll"), params={"limit": 1, "ttl": 0})
        return bool(r.json())

    def claim_batch(self, token: str, limit: int, ttl: int, max_bytes: int | None = None) -> list[dict[str, Any]]:
        """The batch ``token`` names: claimed now, or the same messages again if it was claimed before."""
        params: dict[str, Any] = {"token": token, "limit": limit, "ttl": ttl, "meta": "true"}
        if max_bytes is not None:
            params["maxBytes"] = max_bytes
        out: list[dict[str, Any]] = self.request("POST", self.queue_path("claimbatch"), params=params).json()
        return out

    def renew_batches(self, tokens: Sequence[str], ttl: int) -> int:
        count = 0
        for chunk in _chunks(list(tokens), 1000):
            r = self.request("POST", self.queue_path("renewbatches"), params={"ttl": ttl}, content=_ids(chunk))
            count += int(r.json()["count"])
        return count

    def ack_batches(self, tokens: Sequence[str]) -> int:
        count = 0
        for chunk in _chunks(list(tokens), 1000):
            count += int(self.request("POST", self.queue_path("ackbatches"), content=_ids(chunk)).json()["count"])
        return count

    def claim_count(self) -> int:
        return int(self.request("GET", self.queue_path("claimcount")).json())


def _ids(ids: Sequence[str]) -> bytes:
    return json.dumps(list(ids), separators=(",", ":")).encode()


def _chunks(items: list[str], n: int) -> Iterable[list[str]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def _message(response: httpx.Response) -> str:
    text = response.text.strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:300]
    return text[:300]


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("Retry-After")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None
