"""AWS Signature Version 4 verification of SQS requests: :mod:`spoolq.http.sigv4` (which the SNS
door shares) for the credential scope's service ``sqs``. Its rules, its errors and why a replayed
signature is not refused are written there."""

from __future__ import annotations

from spoolq.http.sigv4 import (
    ALGORITHM,
    CREDENTIAL,
    MAX_PRESIGN_EXPIRES,
    MAX_SKEW,
    canonical_request,
    payload_hash,
    signing_key,
    verify,
)

__all__ = ["ALGORITHM", "CREDENTIAL", "MAX_PRESIGN_EXPIRES", "MAX_SKEW", "canonical_request", "payload_hash",
           "signing_key", "verify"]
