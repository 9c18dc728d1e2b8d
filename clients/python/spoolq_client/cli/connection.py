"""How a client command reaches the service: the common flags (``--url`` or ``SPOOLQ_URL``, default
``http://127.0.0.1:8480``; ``--api-key`` or ``SPOOLQ_API_KEY``; ``--cacert`` or ``SPOOLQ_CA_BUNDLE``,
the CA that signed an HTTPS service's certificate; ``--insecure``; ``--json``; ``--timeout``;
``--dedup``), the URL refused before any request (one that names a door instead of the service),
and the client's exceptions as one-line :class:`CliError` s that name the cause: a certificate that
failed verification (and how to trust it), a refused connection, a host that does not resolve, a
TLS handshake that failed, 403, 400, 404, 409 and 503 each say what to check (exit 1).

Queues are named as users type them (:func:`resolve_queue`): a door's name (``orders.fifo``), a
store name (``sqs:123456789012:us-east-1:orders.fifo``) or an SQS queue URL; the service says
which queue that is, and a name several queues answer to is refused with their full names.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import ssl
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
    p.add_argument("--cacert", default=None, metavar="FILE",
                   help="CA certificate(s) (PEM) that signed an https:// service's certificate "
                        "(default: $SPOOLQ_CA_BUNDLE, else the system's trust store)")
    p.add_argument("--insecure", action="store_true",
                   help="do not verify an https:// service's certificate (tests only: anyone on the path could "
                        "read the API key)")
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
    return SpoolqClient(url, key or None, timeout=args.timeout, verify=verification(args))


def verification(args: argparse.Namespace) -> bool | str:
    """httpx's ``verify`` for the flags: ``False`` with ``--insecure``, the CA file of ``--cacert`` or
    ``SPOOLQ_CA_BUNDLE``, else ``True`` (the system's trust store)."""
    cacert = args.cacert or os.environ.get("SPOOLQ_CA_BUNDLE") or None
    if args.insecure:
        if args.cacert:
            raise CliError("--insecure skips the check that --cacert is for: give one of them", 2)
        return False
    if cacert is None:
        return True
    source = "--cacert" if args.cacert else "SPOOLQ_CA_BUNDLE"
    if not os.path.isfile(cacert):
        raise CliError(f"{source} {cacert}: no such file (give the CA certificate in PEM)", 2)
    try:
        ssl.create_default_context(cafile=cacert)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise CliError(f"{source} {cacert} holds no PEM certificate ({e})", 2) from None
    return cacert


#: a queue name as the service's names take it, or an SQS queue URL
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9._:@-]{1,400}$")
_QUEUE_URL = re.compile(r"^https?://[^/\s]+/(?:[a-z0-9-]+/)?\d{12}/[A-Za-z0-9_.-]{1,80}/?$")


def check_queue_name(name: str) -> None:
    """Refuse, before any request, what no queue can be called (a ``/`` would name another URL)."""
    if not (_QUEUE_NAME.match(name) or _QUEUE_URL.match(name)):
        raise CliError(f"{name[:80]!r} is not a queue name: names are 1-400 characters of A-Z a-z 0-9 . _ : @ - "
                       "(an SQS queue may be given by its queue URL)", 2)


def resolve_queue(c: SpoolqClient, typed: str, *, dedup: bool = False, emodb_door: bool = True) -> str:
    """The store name of the queue ``typed`` names (as users type it); ``typed`` itself when no queue
    answers to it (the command then says what the service says of it); a :class:`CliError` naming
    the full names when several do. With ``dedup``: the dedup queue of that name, as typed. A command
    that goes through the EmoDB door (``emodb_door``) reaches dedup queues with ``--dedup`` only, as
    that door does: their matches are left out."""
    check_queue_name(typed)
    if dedup:
        return typed
    matches = [m for m in c.resolve(typed) if not (emodb_door and m["kind"] == "dedup")]
    if len(matches) > 1:
        names = ", ".join(f"{m['store_name']} ({m['kind']})" for m in matches)
        raise CliError(f"{typed!r} names {len(matches)} queues: {names}; give the full name of the one you mean")
    if _QUEUE_URL.match(typed) and not matches:
        raise CliError(f"no queue has the URL {typed} (`spoolq queues` lists them)")
    return str(matches[0]["store_name"]) if matches else typed


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
        raise CliError(connect_failure(e, url)) from None
    except httpx.TimeoutException:
        raise CliError(f"{url} did not answer in time (raise --timeout?)") from None
    except httpx.HTTPError as e:
        raise CliError(f"HTTP error talking to {url}: {e}") from None
    except NotAuthorized as e:
        raise CliError(f"403 not authorized ({e.message or 'no reason given'}): check --api-key / "
                       "SPOOLQ_API_KEY and that the key has the permission for this queue") from None
    except BadRequest as e:
        if e.status == 401:  # the console's API: no key, or one the service does not know
            raise CliError(f"401 not authorized ({e.message or 'no reason given'}): check --api-key / "
                           "SPOOLQ_API_KEY") from None
        if e.status == 409:
            raise CliError(f"409 conflict: {e.message}") from None
        raise CliError(f"{e.status} bad request: {e.message}") from None
    except NotFound as e:
        raise CliError(f"404 not found: {e.message}") from None
    except Unavailable as e:
        after = f"; retry after {e.retry_after:g}s" if e.retry_after is not None else ""
        raise CliError(f"503 service unavailable: {e.message}{after}") from None
    except SpoolqApiError as e:
        raise CliError(f"server error {e.status}: {e.message}") from None


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and the exceptions it was raised from, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def unresolvable(error: BaseException) -> bool:
    """Whether a connection failed because the host name does not resolve (DNS), not a refusal."""
    if any(isinstance(c, socket.gaierror) for c in _causes(error)):
        return True
    return "Name or service not known" in str(error) or "name resolution" in str(error)


def connect_failure(error: BaseException, url: str) -> str:
    """One line naming why a connection to ``url`` failed: the certificate, the TLS handshake, a
    refusal, the host name, or the system's own words."""
    causes = _causes(error)
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    for c in causes:
        if isinstance(c, ssl.SSLCertVerificationError):
            reason = c.verify_message or c.reason or str(c)
            return (f"the certificate of {url} failed verification ({reason}): give the CA that signed it "
                    "with --cacert FILE or SPOOLQ_CA_BUNDLE (or --insecure, for tests only)")
    text = str(error)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return (f"the certificate of {url} failed verification ({text}): give the CA that signed it "
                "with --cacert FILE or SPOOLQ_CA_BUNDLE (or --insecure, for tests only)")
    for c in causes:
        if isinstance(c, ssl.SSLError):
            hint = " (is it an http:// port?)" if parts.scheme == "https" else ""
            return f"the TLS handshake with {url} failed{hint}: {c.reason or c}"
    if unresolvable(error):
        return f"cannot resolve the host {parts.hostname or url!r} of {url}: check the name in --url or SPOOLQ_URL"
    if any(isinstance(c, ConnectionRefusedError) for c in causes) or "Connection refused" in text:
        return (f"connection refused by {where}: nothing listens there; is spoolq running? "
                "(set --url or SPOOLQ_URL)")
    return f"cannot connect to {url}: {text or type(error).__name__}"
