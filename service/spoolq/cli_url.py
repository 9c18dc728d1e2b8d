"""The service URL of the client commands (``--url``, ``SPOOLQ_URL``): what is refused before any
request, and how a failed connection is explained (a host that does not resolve is not a refusal)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit


class CliError(Exception):
    """A one-line error for stderr; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


#: what a URL copied from a curl example or the start banner ends with; /mq or /docs may be a proxy's prefix
_DOOR_SUFFIXES = ("/queue/1", "/dedupq/1", "/console")


def check_url(url: str, source: str) -> None:
    """Refuse a URL that names a door instead of the service (``.../queue/1``): every request would
    answer a bare 404."""
    path = urlsplit(url).path.rstrip("/")
    for suffix in _DOOR_SUFFIXES:
        if path.endswith(suffix):
            base = url.rstrip("/")[: -len(suffix)]
            raise CliError(f"{source} is {url}: give the service's base URL ({base}), without {suffix}; "
                           "the commands add the paths themselves", 2)


def unresolvable(error: BaseException) -> bool:
    """Whether a connection failed because the host name does not resolve (DNS), not a refusal."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return True
        current = current.__cause__ or current.__context__
    return "Name or service not known" in str(error) or "name resolution" in str(error)
