"""HTTP/HTTPS subscriptions: only to endpoints the operator allows, confirmed by the endpoint, and
delivered with AWS's default retry policy.

Allowed endpoints (no server-side request forgery by default): a subscription to any HTTP or HTTPS
endpoint may be made, but only an endpoint the config file allows is ever contacted ::

    sns:
      http_endpoints:               # URL prefixes; an endpoint must start with one of them
        - https://hooks.internal.example/sns/
        - http://127.0.0.1:9000/

A prefix must name a scheme and a host (and may name a port and a path); an endpoint matches it
when it starts with it and the prefix ends at a path boundary (``http://a/`` does not allow
``http://a.evil/``). A subscription to an endpoint that is not allowed stays pending for good, as
one whose endpoint never confirms does in AWS: no confirmation is sent to it, so it is never
confirmed, and nothing is posted there (a delivery checks the list again, so an endpoint taken out
of it on a reload gets nothing more).

The handshake: Subscribe makes the subscription pending (``PendingConfirmation`` true, the reply's
ARN ``pending confirmation``) and POSTs a ``SubscriptionConfirmation`` to the endpoint (headers
``x-amz-sns-message-type``, ``-message-id``, ``-topic-arn``, ``Content-Type: text/plain;
charset=UTF-8``; a body signed as a notification is, with ``Token`` and ``SubscribeURL``, the
URL of ConfirmSubscription on this service). Fetching ``SubscribeURL`` (or ConfirmSubscription
with the token) confirms it; that action needs no signature, the token is the proof, as in AWS.

Delivery: a publish hands each matching confirmed HTTP subscription's notification to this
process's delivery threads after its queues hold the message (a slow endpoint never delays the
answer). A delivery succeeds on a 2xx answer; otherwise it is tried again as the subscription's
(or the topic's) ``DeliveryPolicy`` says, by default AWS's: 3 more tries, 20 s apart. A delivery
that still fails goes to the subscription's dead-letter queue (``RedrivePolicy``) or is dropped.
HTTP deliveries live in the process that publishes: one in progress when the process stops is
lost (a subscription that must not lose a message subscribes a queue). The delivery threads are
daemon threads, so a retry waiting for its turn never holds up a worker's exit on a stop or reload.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from spoolq.http.sns.envelope import CONFIRMATION_FIELDS, string_to_sign, timestamp
from spoolq.http.sns.errors import InvalidParameter
from spoolq.http.sns.signing import Signer
from spoolq.topics.catalog import Subscription

log = logging.getLogger(__name__)

#: AWS's default delivery policy for HTTP/S: 3 retries, 20 s apart
DEFAULT_RETRIES = 3
DEFAULT_DELAY = 20.0
TIMEOUT = 15.0
THREADS = 4


def allowed(endpoint: str, prefixes: tuple[str, ...]) -> bool:
    for prefix in prefixes:
        if endpoint.startswith(prefix) and (prefix.endswith("/") or endpoint[len(prefix):len(prefix) + 1] in
                                            ("", "/", "?")):
            return True
    return False


def check_endpoint(protocol: str, endpoint: str) -> None:
    parts = urlsplit(endpoint)
    if parts.scheme != protocol or not parts.hostname:
        raise InvalidParameter("Endpoint", f"an {protocol} endpoint is an {protocol}:// URL")


@dataclass(frozen=True)
class Retry:
    tries: int
    delays: tuple[float, ...]


def retry_policy(sub: Subscription, topic_policy: str | None) -> Retry:
    """The tries and the waits between them: the subscription's DeliveryPolicy, else the topic's
    ``http.defaultHealthyRetryPolicy``, else AWS's default (linear from min to max delay)."""
    policy: Any = None
    for text, path in ((sub.attributes.get("DeliveryPolicy"), ("healthyRetryPolicy",)),
                       (topic_policy, ("http", "defaultHealthyRetryPolicy"))):
        try:
            policy = json.loads(text) if text else None
            for part in path:
                policy = policy.get(part) if isinstance(policy, dict) else None
        except ValueError:
            policy = None
        if isinstance(policy, dict):
            break
    if not isinstance(policy, dict):
        return Retry(1 + DEFAULT_RETRIES, (DEFAULT_DELAY,) * DEFAULT_RETRIES)
    retries = max(0, min(int(policy.get("numRetries", DEFAULT_RETRIES)), 100))
    low = max(0.0, float(policy.get("minDelayTarget", DEFAULT_DELAY)))
    high = max(low, float(policy.get("maxDelayTarget", DEFAULT_DELAY)))
    step = (high - low) / max(1, retries - 1)
    return Retry(1 + retries, tuple(min(high, low + step * i) for i in range(retries)))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is a failed delivery, never a request to where it points (an endpoint outside the
    allowed ones)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


class Webhooks:
    """This process's HTTP deliveries (see the module docstring)."""

    def __init__(self, dead_letter: Callable[[Subscription, str], None]) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._started = False
        self._lock = threading.Lock()
        self._dead_letter = dead_letter
        self.sleep: Callable[[float], None] = time.sleep

    def _submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on one of :data:`THREADS` daemon threads (started with the first job: after a
        fork, in the process that delivers)."""
        with self._lock:
            if not self._started:
                for i in range(THREADS):
                    threading.Thread(target=self._run, name=f"spoolq-sns-http-{i}", daemon=True).start()
                self._started = True
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:  # a delivery's mistake never ends the thread
                log.exception("SNS HTTP delivery failed")

    def confirm(self, sub: Subscription, signer: Signer, base_url: str, version: str) -> None:
        """POST the SubscriptionConfirmation of a pending subscription (in the background)."""
        topic_arn = sub.topic.arn
        fields = {"Type": "SubscriptionConfirmation", "MessageId": str(uuid.uuid4()), "Token": sub.token,
                  "TopicArn": topic_arn,
                  "Message": f"You have chosen to subscribe to the topic {topic_arn}.\nTo confirm the subscription, "
                             "visit the SubscribeURL included in this message.",
                  "SubscribeURL": f"{base_url}/?Action=ConfirmSubscription&TopicArn={quote(topic_arn, safe=':')}"
                                  f"&Token={sub.token}",
                  "Timestamp": timestamp(time.time())}
        fields["SignatureVersion"] = version
        fields["Signature"] = signer.sign(string_to_sign(fields, CONFIRMATION_FIELDS), version)
        fields["SigningCertURL"] = signer.cert_url(base_url)
        body = json.dumps(fields, indent=2, separators=(",", " : "))
        retry = Retry(1 + DEFAULT_RETRIES, (DEFAULT_DELAY,) * DEFAULT_RETRIES)
        self._submit(lambda: self._post(sub, body, "SubscriptionConfirmation", fields["MessageId"], retry, False))

    def deliver(self, sub: Subscription, body: str, message_id: str, retry: Retry, raw: bool,
                prefixes: tuple[str, ...]) -> None:
        if allowed(sub.endpoint, prefixes):
            self._submit(lambda: self._post(sub, body, "Notification", message_id, retry, raw))

    def _post(self, sub: Subscription, body: str, kind: str, message_id: str, retry: Retry, raw: bool) -> None:
        headers = {"Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": kind,
                   "x-amz-sns-message-id": message_id, "x-amz-sns-topic-arn": sub.topic.arn,
                   "User-Agent": "Amazon Simple Notification Service Agent"}
        if kind == "Notification":
            headers["x-amz-sns-subscription-arn"] = sub.arn
        if raw:
            headers["x-amz-sns-rawdelivery"] = "true"
        for attempt in range(retry.tries):
            if attempt:
                self.sleep(retry.delays[attempt - 1])
            request = urllib.request.Request(sub.endpoint, body.encode("utf-8"), headers, method="POST")
            try:
                with _OPENER.open(request, timeout=TIMEOUT) as reply:
                    if 200 <= reply.status < 300:
                        return
            except (urllib.error.URLError, OSError, ValueError) as e:
                log.info("SNS %s to %s failed (try %d of %d): %s", kind, sub.endpoint, attempt + 1, retry.tries, e)
        if kind == "Notification":
            self._dead_letter(sub, body)
