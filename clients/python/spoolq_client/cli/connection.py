"""How a client command reaches the service: the common flags (``--url`` or ``SPOOLQ_URL``, default
``http://127.0.0.1:8480``; ``--api-key`` or ``SPOOLQ_API_KEY``; ``--json``; ``--timeout``;
``--dedup``), the URL refused before any request (one that names a door instead of the service),
and the client's exceptions as one-line :class:`CliError` s: a refused connection, a host that
does not resolve, 403, 400, 404 and 503 each say what to check (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from spoolq_client.cli.command import CliError
from spoolq_client.client import SpoolqClient
from spoolq_client.errors import BadRequest, NotAuthorized, NotFound, SpoolqApiError, Unavailable

DEFAULT_URL = "http://127.0.0.1:8480"

#: what a URL copied from a curl example or the start banner ends with; /mq or /docs may be a proxy's prefix
_DOOR_SUFFIXES = ("/queue/1", "/dedupq/1", "/console")


def add_connection_flags(p: argparse.ArgumentParser, *, dedup: bool = True) -> None:
    """The flags every client command takes (``dedup``: and ``--dedup``, for the commands on one queue)."""
    p.add_argument("--url", default=None, help=f"service URL (default: $SPOOLQ_URL or {DEFAULT_URL})")
    p.add_argument("--api-key", dest="api_key", default=None, help="API key (default: $SPOOLQ_API_KEY)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout (for scripts)")
    p.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds (default 60)")
    if dedup:
        p.add_argument("--dedup", action="store_true", help="use the dedup queue API (/dedupq/1)")


def run_with_client(args: argparse.Namespace, body: Callable[[SpoolqClient], int]) -> int:
    """``body`` with a client for the flags' URL and key; its request errors as :class:`CliError`."""
    client = _client(args)
    try:
        with _api_errors(client.base_url):
            return body(client)
    finally:
        client.close()


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False))


def _client(args: argparse.Namespace) -> SpoolqClient:
    url = args.url or os.environ.get("SPOOLQ_URL") or DEFAULT_URL
    check_url(url, "--url" if args.url else "SPOOLQ_URL" if os.environ.get("SPOOLQ_URL") else "the default URL")
    key = args.api_key if args.api_key is not None else os.environ.get("SPOOLQ_API_KEY")
    return SpoolqClient(url, key or None, timeout=args.timeout)


def check_url(url: str, source: str) -> None:
    """Refuse a URL that names a door instead of the service (``.../queue/1``): every request would
    answer a bare 404."""
    path = urlsplit(url).path.rstrip("/")
    for suffix in _DOOR_SUFFIXES:
        if path.endswith(suffix):
            base = url.rstrip("/")[: -len(suffix)]
            raise CliError(f"{source} is {url}: give the service's base URL ({base}), without {suffix}; "
                           "the commands add the paths themselves", 2)


@contextmanager
def _api_errors(url: str) -> Iterator[None]:
    """Turn the client's exceptions into one-line :class:`CliError` s."""
    try:
        yield
    except httpx.ConnectError as e:
        if unresolvable(e):
            host = urlsplit(url).hostname or url
            raise CliError(f"cannot resolve the host {host!r} of {url}: check the name in --url or "
                           "SPOOLQ_URL") from None
        raise CliError(f"cannot connect to {url} (connection refused?): is spoolq running there? "
                       "Set --url or SPOOLQ_URL") from None
    except httpx.TimeoutException:
        raise CliError(f"{url} did not answer in time (raise --timeout?)") from None
    except httpx.HTTPError as e:
        raise CliError(f"HTTP error talking to {url}: {e}") from None
    except NotAuthorized as e:
        raise CliError(f"403 not authorized ({e.message or 'no reason given'}): check --api-key / "
                       "SPOOLQ_API_KEY and that the key has the permission for this queue") from None
    except BadRequest as e:
        raise CliError(f"{e.status} bad request: {e.message}") from None
    except NotFound as e:
        raise CliError(f"404 not found: {e.message}") from None
    except Unavailable as e:
        after = f"; retry after {e.retry_after:g}s" if e.retry_after is not None else ""
        raise CliError(f"503 service unavailable: {e.message}{after}") from None
    except SpoolqApiError as e:
        raise CliError(f"server error {e.status}: {e.message}") from None


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
