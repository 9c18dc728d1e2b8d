"""Optional AWS Signature Version 4 verification of SQS requests.

Off unless credentials are configured (the open development mode accepts any
key, like moto). Credentials come from the ``sqs_credentials`` mapping (access
key id -> secret access key) of the YAML file named by ``settings.config``::

    sqs_credentials:
      AKIDEXAMPLE: wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY

When on, every SQS request must carry ``Authorization: AWS4-HMAC-SHA256
Credential=<key>/<yyyymmdd>/<region>/sqs/aws4_request, SignedHeaders=..., Signature=...``
and ``X-Amz-Date`` within 15 minutes of the server clock. The canonical request is
rebuilt from the method, path, query string, the signed headers and the SHA-256
of the body exactly as botocore signs it. Failures answer 403 with AWS's codes:
``MissingAuthenticationToken``, ``InvalidClientTokenId`` (unknown key),
``SignatureDoesNotMatch`` and ``RequestExpired``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from calendar import timegm
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote, unquote

import yaml
from flask import Request

from spoolq.http.sqs.errors import (
    InvalidClientTokenId,
    MissingAuthenticationToken,
    RequestExpired,
    SignatureDoesNotMatch,
)

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = 15 * 60
_SIGNED_HEADERS = re.compile(r"SignedHeaders=([a-z0-9;-]+)")
_SIGNATURE = re.compile(r"Signature=([0-9a-f]{64})")
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")


def load_credentials(config: Path | None) -> dict[str, str]:
    """The configured access key -> secret map (empty: verification off)."""
    if config is None or not config.exists():
        return {}
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    creds = data.get("sqs_credentials") or {} if isinstance(data, dict) else {}
    if not isinstance(creds, dict):
        raise ValueError(f"{config}: sqs_credentials must map access key ids to secrets")
    return {str(k): str(v) for k, v in creds.items()}


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret}".encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def _canonical_query(query: bytes) -> str:
    pairs: list[tuple[str, str]] = []
    for part in query.decode("utf-8").split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        pairs.append((quote(unquote(key), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def canonical_request(request: Request, signed_headers: list[str]) -> str:
    path = quote(request.path or "/", safe="/-_.~")
    headers = "".join(f"{name}:{' '.join((request.headers.get(name) or '').split())}\n"
                      for name in signed_headers)
    payload = request.headers.get("X-Amz-Content-SHA256") or hashlib.sha256(
        request.get_data(cache=True)).hexdigest()
    return "\n".join([request.method, path, _canonical_query(request.query_string), headers,
                      ";".join(signed_headers), payload])


def verify(request: Request, credentials: Mapping[str, str], now: float | None = None) -> None:
    """Raise the AWS error for a request that is not signed by a configured key."""
    if not credentials:
        return
    auth = request.headers.get("Authorization", "")
    cred = _CREDENTIAL.search(auth)
    signed = _SIGNED_HEADERS.search(auth)
    sig = _SIGNATURE.search(auth)
    amz_date = request.headers.get("X-Amz-Date", "")
    if not auth.startswith(ALGORITHM) or not (cred and signed and sig and amz_date):
        raise MissingAuthenticationToken()
    access_key, date, region, service = cred.groups()
    secret = credentials.get(access_key)
    if secret is None:
        raise InvalidClientTokenId()
    try:
        signed_at = timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise SignatureDoesNotMatch() from None
    if abs((time.time() if now is None else now) - signed_at) > MAX_SKEW:
        raise RequestExpired()
    canonical = canonical_request(request, signed.group(1).split(";"))
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    expected = hmac.new(signing_key(secret, date, region, service), to_sign.encode("utf-8"),
                        hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, sig.group(1)):
        raise SignatureDoesNotMatch()
