"""TLS for every door: the server's certificate, its key, and (for mutual TLS) the clients' CA.

Settings (``spoolq serve`` flags, ``SPOOLQ_*`` variables): ``certfile`` (PEM chain, the server's
own certificate first), ``keyfile`` (its PEM private key, unencrypted; default: in ``certfile``),
``client_ca`` (a PEM bundle: every client must then present a certificate one of these CAs
signed) and ``disque_tls_port``.

How the ports behave once a certificate is configured (the goal: no secret ever travels on a
clear-text port of this service):

* **HTTP** (EmoDB, MQ, SQS, console, ``/metrics``): the one HTTP port speaks only HTTPS, through
  gunicorn's TLS (``certfile``, ``keyfile``, ``ca_certs``, ``cert_reqs``); there is no clear-text
  HTTP port. A clear-text request sent to it is answered ``400`` with a one-line JSON reason
  ("this port speaks HTTPS") and the connection closed, before any of it reaches the app: the
  request (and an API key or signature in it) is neither served nor logged.
* **Disque**: ``disque_tls_port`` serves RESP over TLS (Redis 6's ``tls-port``). The clear-text
  ``disque_port`` stays off (0, the default: Redis's ``port 0``) unless asked for; next to TLS,
  with API keys configured, it is refused on any address but loopback, since ``AUTH`` would
  carry a key in clear text over the network (:func:`clear_text_problem`). A clear-text
  connection to the TLS port fails its handshake and is closed within the handshake timeout.

:func:`check_files` is what ``spoolq check-config`` (and so ``serve``) checks: each file exists
and is readable, ``certfile`` holds a certificate, ``keyfile`` an unencrypted private key that
matches it, ``client_ca`` a CA that loads. The first problem is named in one line.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spoolq.settings.server import Settings, SettingsError

#: a TLS handshake not finished within this is abandoned (the connection closed)
HANDSHAKE_SECONDS = 10.0

_PROCESS_CONTEXTS: dict[tuple[Any, ...], ssl.SSLContext] = {}
#: the HTTP door's context built by ``spoolq serve``'s master from the files it accepted
#: (:func:`hold_server_context`), inherited by every worker it forks after
_held_context: list[ssl.SSLContext] = []


class TlsFileError(SettingsError):
    """A TLS file that cannot be used; the message names the setting, the file and why."""


def server_context(settings: Settings) -> ssl.SSLContext:
    """The server side of TLS for ``settings`` (the Disque door's; HTTP gets the same from gunicorn)."""
    assert settings.certfile is not None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH,
                                     cafile=str(settings.client_ca) if settings.client_ca else None)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(settings.certfile), str(settings.keyfile) if settings.keyfile else None,
                        password=_no_password)
    ctx.verify_mode = ssl.CERT_REQUIRED if settings.client_ca else ssl.CERT_NONE
    return ctx


def hold_server_context(settings: Settings, context: ssl.SSLContext | None = None) -> ssl.SSLContext:
    """Hold the HTTP door's context for every worker forked from now on: ``context`` (one held
    before: a reload falling back), else one built from the TLS files now; returns it. Called by
    ``spoolq serve``'s master once it has checked the files (at start and at each reload), so that
    a worker started later (one replaced after it died) serves with the files its siblings serve
    with, never with files changed since and not yet checked. Raises what loading them raises."""
    held = context if context is not None else server_context(settings)
    _held_context[:] = [held]
    return held


def gunicorn_ssl_context(config: Any, default_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """gunicorn hook ``ssl_context``: the context the master holds (:func:`hold_server_context`),
    else gunicorn's context from its TLS settings, built once per worker process instead of once
    per connection (it reads the files). A reload (new workers) serves renewed files."""
    if _held_context:
        return _held_context[0]
    key = (os.getpid(), config.certfile, config.keyfile, config.ca_certs, config.cert_reqs)
    ctx = _PROCESS_CONTEXTS.get(key)
    if ctx is None:
        ctx = default_factory()
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        _PROCESS_CONTEXTS.clear()
        _PROCESS_CONTEXTS[key] = ctx
    return ctx


def gunicorn_tls_options(settings: Settings) -> dict[str, Any]:
    """gunicorn's TLS settings for ``settings`` (none without a certificate)."""
    if settings.certfile is None:
        return {}
    return {"certfile": str(settings.certfile), "keyfile": str(settings.keyfile or settings.certfile),
            "ca_certs": str(settings.client_ca) if settings.client_ca else None,
            "cert_reqs": ssl.CERT_REQUIRED if settings.client_ca else ssl.CERT_NONE,
            "ssl_context": gunicorn_ssl_context}


def _no_password() -> str:
    raise TlsFileError("keyfile: the private key is encrypted; give spoolq an unencrypted key "
                       "(readable by its user only)")


def check_files(settings: Settings) -> str:
    """What :mod:`spoolq.cli.check_config` prints for TLS (``""``: not configured); raises
    :class:`TlsFileError` naming the first file that cannot be used."""
    if settings.certfile is None:
        return ""
    cert = settings.certfile
    key = settings.keyfile or cert
    for name, path in (("certfile", cert), ("keyfile", key), ("client_ca", settings.client_ca)):
        if path is not None:
            _readable(name, path)
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        probe.load_verify_locations(cafile=str(cert))
    except ssl.SSLError:
        raise TlsFileError(f"certfile {cert}: no PEM certificate in it") from None
    key_text = key.read_bytes()
    if b"PRIVATE KEY-----" not in key_text:
        raise TlsFileError(f"keyfile {key}: no PEM private key in it")
    if b"ENCRYPTED" in key_text:
        raise TlsFileError(f"keyfile {key}: the private key is encrypted; give spoolq an unencrypted key "
                           "(readable by its user only)")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        server.load_cert_chain(str(cert), str(key), password=_no_password)
    except ssl.SSLError as e:
        if "KEY_VALUES_MISMATCH" in str(e) or "key values mismatch" in str(e):
            raise TlsFileError(f"keyfile {key}: the private key does not match the certificate in {cert}") from None
        raise TlsFileError(f"keyfile {key}: cannot be used with {cert}: {e.reason or e}") from None
    what = f"TLS with {cert}"
    if settings.client_ca is not None:
        ca = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            ca.load_verify_locations(cafile=str(settings.client_ca))
        except ssl.SSLError:
            raise TlsFileError(f"client_ca {settings.client_ca}: no PEM certificate in it") from None
        if not ca.get_ca_certs():
            raise TlsFileError(f"client_ca {settings.client_ca}: holds no CA certificate (one that may sign others)")
        what += f", client certificates signed by {settings.client_ca} required (mutual TLS)"
    if key.stat().st_mode & 0o004:
        what += f"; warning: {key} is readable by every user"
    return what


def _readable(name: str, path: Path) -> None:
    try:
        with path.open("rb") as f:
            f.read(1)
    except FileNotFoundError:
        raise TlsFileError(f"{name} {path}: no such file") from None
    except IsADirectoryError:
        raise TlsFileError(f"{name} {path}: is a directory, not a file") from None
    except OSError as e:
        raise TlsFileError(f"{name} {path}: cannot be read ({e.strerror})") from None


def clear_text_problem(settings: Settings, *, keys_configured: bool) -> str | None:
    """Why the settings would put a secret on a clear-text port (None: they do not). With TLS
    configured and API keys in the config, a clear-text Disque port is allowed on loopback only:
    its ``AUTH`` would carry a key."""
    if settings.certfile is None or not keys_configured or not settings.disque_port:
        return None
    if _is_loopback(settings.disque_host):
        return None
    return (f"a clear-text Disque port ({settings.disque_host}:{settings.disque_port}) next to TLS would carry "
            "AUTH keys in clear text over the network: serve Disque on disque_tls_port only (disque_port 0), "
            "or keep the clear-text port on a loopback disque_host")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
