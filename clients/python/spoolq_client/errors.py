"""Exceptions raised by :class:`spoolq_client.SpoolqClient` (the hand-written layer).

Every non-success answer becomes one :class:`SpoolqApiError` subclass carrying the HTTP status,
the server's one-line explanation and, for 503, the ``Retry-After`` seconds. Transport failures
(connection refused, timeouts) are httpx exceptions and are left as they are.
"""

from __future__ import annotations


class SpoolqApiError(Exception):
    """The server answered with a status the operation does not treat as success."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}" if message else f"HTTP {status}")
        self.status = status
        self.message = message
        self.retry_after = retry_after


class BadRequest(SpoolqApiError):
    """400, 413, 415 or 422: the request was rejected and nothing changed."""


class NotAuthorized(SpoolqApiError):
    """403: unknown API key, or the key lacks the permission for this queue."""


class NotFound(SpoolqApiError):
    """404: unknown move reference (or MQ queue / message)."""


class Unavailable(SpoolqApiError):
    """503: storage cannot guarantee durability now; retry after ``retry_after`` seconds."""


def error_for(status: int, message: str, retry_after: float | None = None) -> SpoolqApiError:
    cls: type[SpoolqApiError]
    if status == 403:
        cls = NotAuthorized
    elif status == 404:
        cls = NotFound
    elif status == 503:
        cls = Unavailable
    elif 400 <= status < 500:
        cls = BadRequest
    else:
        cls = SpoolqApiError
    return cls(status, message, retry_after=retry_after)
