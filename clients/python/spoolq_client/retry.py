"""Back-off shared by the Consumer and the Producer.

``Backoff.delay(error)`` says how long to wait before the next attempt: the server's
``Retry-After`` when a 503 carries one (never less), otherwise capped exponential back-off with
full jitter. Which errors are worth retrying is decided here too, in one place.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

import httpx

from spoolq_client.errors import SpoolqApiError, Unavailable

#: Transport errors raised before the request could have reached the server: always safe to retry.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def retryable(error: BaseException) -> bool:
    """503, any 5xx and transport failures; never a 4xx (the same request would fail again)."""
    if isinstance(error, SpoolqApiError):
        return isinstance(error, Unavailable) or error.status >= 500
    return isinstance(error, httpx.TransportError)


def ambiguous(error: BaseException) -> bool:
    """True when the request may have been applied although no success was seen (a read timeout or
    a dropped connection after the request was sent). A 503 is never ambiguous: spoolq stores
    nothing of a request it answers 503 to."""
    return isinstance(error, httpx.TransportError) and not isinstance(error, NOT_SENT)


_RNG = random.Random()  # seeding a Random per call reads urandom: share one (jitter needs no secrecy)


@dataclass
class Backoff:
    base: float = 0.1
    cap: float = 30.0
    attempt: int = 0
    rng: random.Random = field(default=_RNG)

    def delay(self, error: BaseException | None = None) -> float:
        self.attempt += 1
        exp = min(self.cap, self.base * (2 ** min(self.attempt - 1, 30)))
        wait = self.rng.uniform(exp / 2, exp)
        if isinstance(error, Unavailable) and error.retry_after is not None:
            wait = max(wait, error.retry_after)
        return wait

    def reset(self) -> None:
        self.attempt = 0


def sleep(seconds: float, stop: threading.Event | None) -> bool:
    """Sleep, waking early when ``stop`` is set. Returns True when stopped."""
    if stop is None:
        threading.Event().wait(seconds)
        return False
    return stop.wait(seconds)
