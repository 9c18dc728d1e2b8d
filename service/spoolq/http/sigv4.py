"""AWS Signature Version 4 verification, shared by the doors that speak an AWS protocol (SQS, SNS).

Off only in open mode (no credentials configured at all: the development mode accepts any
key, like moto). Otherwise every request of such a door must carry ``Authorization: AWS4-HMAC-SHA256
Credential=<key>/<yyyymmdd>/<region>/<service>/aws4_request, SignedHeaders=..., Signature=...``
whose service is the door's (``sqs``, ``sns``) and whose access key id belongs to a configured
identity (:mod:`spoolq.access.auth`), and:
* ``X-Amz-Date`` within 15 minutes of the server clock (else ``RequestExpired``), on the
  same day as the credential scope, and ``host`` among the signed headers;
* the body bound to the signature: the canonical request is rebuilt from the method, path,
  query string, the signed headers and the SHA-256 of the body as received (never a hash
  the client declares), and an ``X-Amz-Content-SHA256`` header, when present, must equal
  that hash (``UNSIGNED-PAYLOAD`` is refused);
* the HMAC must match, compared in constant time.

The same signature may instead travel in the query string (a presigned ``GET``, as botocore's
``SigV4QueryAuth`` makes one): ``X-Amz-Algorithm``, ``X-Amz-Credential``, ``X-Amz-Date``,
``X-Amz-SignedHeaders``, ``X-Amz-Signature`` and ``X-Amz-Expires`` (at most 7 days; the request
is refused once it has passed, and the 15-minute window does not apply). The canonical query
string is every parameter but ``X-Amz-Signature``.

Failures answer 403 with AWS's codes: ``MissingAuthenticationToken`` (no or malformed
Authorization), ``InvalidClientTokenId`` (unknown key), ``SignatureDoesNotMatch`` and
``RequestExpired``.

Replays. A signature is not refused for having been seen before. SigV4 signs the time to
the second and botocore signs no per-call nonce (``amz-sdk-invocation-id`` is not a signed
header), so two identical calls in one second -- two empty ``ReceiveMessage`` polls, two
``ListQueues`` -- carry byte-identical signatures; refusing the second would break ordinary
clients. What bounds a replay is the 15-minute window and the body binding: a captured
request can be replayed as-is, never with another body or after the window. Use TLS (a
terminating proxy) where the network is not trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from calendar import timegm
from urllib.parse import quote, unquote

from flask import Request

from spoolq.access.auth import Authenticator, Principal
from spoolq.errors import SpoolqError


class SigV4Error(SpoolqError):
    """A request that SigV4 refuses: 403 with AWS's code (the same code on the SQS and SNS wires)."""

    sqs_status = 403


class InvalidClientTokenId(SigV4Error):
    """An access key the server does not know (SigV4 verification on)."""

    sqs_type = "InvalidClientTokenId"
    sqs_query_code = "InvalidClientTokenId"

    def __init__(self) -> None:
        super().__init__("The security token included in the request is invalid.")


class SignatureDoesNotMatch(SigV4Error):
    sqs_type = "SignatureDoesNotMatch"
    sqs_query_code = "SignatureDoesNotMatch"

    def __init__(self, message: str = "The request signature we calculated does not match the signature you "
                                       "provided. Check your AWS Secret Access Key and signing method. "
                                       "Consult the service documentation for details.") -> None:
        super().__init__(message)


class MissingAuthenticationToken(SigV4Error):
    sqs_type = "MissingAuthenticationToken"
    sqs_query_code = "MissingAuthenticationToken"

    def __init__(self) -> None:
        super().__init__("Request is missing Authentication Token")


class RequestExpired(SigV4Error):
    sqs_type = "RequestExpired"
    sqs_query_code = "RequestExpired"

    def __init__(self) -> None:
        super().__init__("Request has expired.")


ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = 15 * 60
_SIGNED_HEADERS = re.compile(r"SignedHeaders=([a-z0-9;-]+)")
_SIGNATURE = re.compile(r"Signature=([0-9a-f]{64})")
#: the credential scope of a SigV4 Authorization header: access key, date, region, service
CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret}".encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


MAX_PRESIGN_EXPIRES = 7 * 24 * 3600


def _canonical_query(query: bytes) -> str:
    pairs: list[tuple[str, str]] = []
    for part in query.decode("utf-8").split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        if unquote(key) == "X-Amz-Signature":
            continue  # a presigned request signs every parameter but its signature
        pairs.append((quote(unquote(key), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def payload_hash(request: Request) -> str:
    """The hex SHA-256 of the body as received; a declared ``X-Amz-Content-SHA256`` must agree."""
    actual = hashlib.sha256(request.get_data(cache=True)).hexdigest()
    declared = request.headers.get("X-Amz-Content-SHA256")
    if declared is not None and declared.strip().lower() != actual:
        raise SignatureDoesNotMatch("The provided 'x-amz-content-sha256' header does not match what was computed.")
    return actual


def canonical_request(request: Request, signed_headers: list[str], payload: str) -> str:
    path = quote(request.path or "/", safe="/-_.~")
    headers = "".join(f"{name}:{' '.join((request.headers.get(name) or '').split())}\n"
                      for name in signed_headers)
    return "\n".join([request.method, path, _canonical_query(request.query_string), headers,
                      ";".join(signed_headers), payload])


def verify(request: Request, auth: Authenticator, now: float | None = None, *,
           service: str = "sqs") -> Principal | None:
    """The principal that signed ``request`` for ``service`` (the credential scope's service name:
    ``sqs``, ``sns``), ``None`` in open mode; raise the AWS error otherwise."""
    if auth.open:
        return None
    header = request.headers.get("Authorization", "")
    expires: int | None = None
    if not header and request.args.get("X-Amz-Algorithm") == ALGORITHM:
        args = request.args
        header = (f"{ALGORITHM} Credential={args.get('X-Amz-Credential', '')}, "
                  f"SignedHeaders={args.get('X-Amz-SignedHeaders', '')}, Signature={args.get('X-Amz-Signature', '')}")
        try:
            expires = int(args.get("X-Amz-Expires", ""))
        except ValueError:
            raise MissingAuthenticationToken() from None
        if not 1 <= expires <= MAX_PRESIGN_EXPIRES:
            raise MissingAuthenticationToken()
        amz_date = args.get("X-Amz-Date", "")
    else:
        amz_date = request.headers.get("X-Amz-Date", "")
    cred = CREDENTIAL.search(header)
    signed = _SIGNED_HEADERS.search(header)
    sig = _SIGNATURE.search(header)
    if not header.startswith(ALGORITHM) or not (cred and signed and sig and amz_date):
        raise MissingAuthenticationToken()
    access_key, date, region, scope_service = cred.groups()
    identity = auth.signing_identity(access_key)
    if identity is None:
        raise InvalidClientTokenId()
    try:
        signed_at = timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise SignatureDoesNotMatch() from None
    clock = time.time() if now is None else now
    if expires is not None:
        if not signed_at - MAX_SKEW <= clock <= signed_at + expires:
            raise RequestExpired()
    elif abs(clock - signed_at) > MAX_SKEW:
        raise RequestExpired()
    signed_headers = signed.group(1).split(";")
    if amz_date[:8] != date or "host" not in signed_headers or scope_service != service:
        raise SignatureDoesNotMatch()
    canonical = canonical_request(request, signed_headers, payload_hash(request))
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    expected = hmac.new(signing_key(identity.secret, date, region, service), to_sign.encode("utf-8"),
                        hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, sig.group(1)):
        raise SignatureDoesNotMatch()
    return identity.principal
