"""Who is calling, and how SQS names map onto store names, URLs, ARNs and receipts.

Scoping
    SQS queues live per account and region. The region comes from the SigV4
    credential scope (``Credential=<key>/<date>/<region>/sqs/aws4_request``, in the
    Authorization header or the ``X-Amz-Credential`` query parameter), falling back to
    ``settings.sqs_region`` (the default region); the account is ``settings.sqs_account_id``
    (default 123456789012, as moto uses).

Names
    SQS queue ``<QueueName>`` of account ``A`` in region ``R`` is the store queue
    ``sqs:A:R:<QueueName>`` (always within the store's ``^[A-Za-z0-9._:@-]{1,400}$``).
    Its URL is ``<scheme>://<Host header>/<A>/<QueueName>`` in the default region and
    ``<scheme>://<Host header>/<R>/<A>/<QueueName>`` in any other (the same name in two
    regions is two queues with two URLs), and its ARN ``arn:aws:sqs:R:A:<QueueName>``.
    A ``QueueUrl`` is resolved by its path: the last segment is the name, and a region
    segment before the account, when there is one, is the region (without one, the
    request's region: URLs handed out before regions were in them keep working). The
    host is never used, and a bare queue name is accepted too.

Sender ids
    SenderId is the caller's identity id as AWS shows one: the account id in open mode
    (as for an account's root credentials), else ``AIDA`` and 17 characters derived from
    the identity's name (as for an IAM user), the same on every server.

Receipt handles
    ``base64url("<store queue>\\n<received at, ms>\\n<store receipt>")``: the store's
    opaque receipt, the queue it belongs to (a handle used on another queue is
    invalid) and the receive time (the 12-hour visibility limit counts from it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from flask import Request

from spoolq.http.sqs.errors import QueueDoesNotExist, ReceiptHandleIsInvalid
from spoolq.http.sqs.sigv4 import CREDENTIAL
from spoolq.queues import names as queue_names
from spoolq.settings.server import Settings

QUEUE_NAME = queue_names.SQS_NAME
_ARN = re.compile(r"^arn:[a-z-]+:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_.-]{1,80})$")
#: an AWS region name (``us-east-1``, ``us-gov-west-1``, ``eu-central-2``)
REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$")


@dataclass(frozen=True)
class Caller:
    """The account, region and access key of one request, and the base of its queue URLs."""

    account: str
    region: str
    access_key: str | None
    base_url: str
    #: the server's default region: its queue URLs carry no region segment
    default_region: str = "us-east-1"
    #: SenderId of the messages this caller sends
    sender_id: str = ""

    def store_name(self, queue_name: str) -> str:
        return queue_names.sqs_store_name(self.account, self.region, queue_name)

    def url(self, queue_name: str) -> str:
        if self.region == self.default_region:
            return f"{self.base_url}/{self.account}/{queue_name}"
        return f"{self.base_url}/{self.region}/{self.account}/{queue_name}"

    def arn(self, queue_name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account}:{queue_name}"

    def store_prefix(self) -> str:
        return queue_names.sqs_store_name(self.account, self.region, "")

    def queue_from_url(self, queue_url: str) -> str:
        """The store name of the queue a ``QueueUrl`` (or bare name) designates."""
        parts = queue_url.rstrip("/").split("/") if queue_url else [""]
        name = parts[-1]
        if not QUEUE_NAME.match(name):
            raise QueueDoesNotExist()
        if len(parts) >= 3 and REGION.match(parts[-3]) and parts[-2].isdigit():
            return queue_names.sqs_store_name(self.account, parts[-3], name)
        return self.store_name(name)


def sender_id_of(account: str, identity: str | None) -> str:
    """SenderId for a caller: the account id in open mode, else an IAM-user-like id of the identity."""
    if identity is None:
        return account
    digest = base64.b32encode(hashlib.sha256(identity.encode("utf-8")).digest()).decode("ascii")
    return f"AIDA{digest[:17]}"


def caller_of(request: Request, settings: Settings, identity: str | None = None) -> Caller:
    """The caller of ``request``; ``identity`` is the name of who signed it (``None``: open mode)."""
    environ = request.environ  # read directly: the headers' and the query's parsed views cost more
    match = CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match is None and environ.get("QUERY_STRING"):  # a presigned URL
        match = CREDENTIAL.search("Credential=" + request.args.get("X-Amz-Credential", ""))
    region = match.group(3) if match else settings.sqs_region
    access_key = match.group(1) if match else None
    base = f"{request.scheme}://{request.host}"
    return Caller(settings.sqs_account_id, region, access_key, base, settings.sqs_region,
                  sender_id_of(settings.sqs_account_id, identity))


split_store_name = queue_names.split_sqs_store_name


def arn_of_store_name(store_name: str) -> str:
    parts = split_store_name(store_name)
    if parts is None:
        return f"arn:aws:sqs:::{store_name}"
    account, region, name = parts
    return f"arn:aws:sqs:{region}:{account}:{name}"


def store_name_of_arn(arn: str) -> str | None:
    """The store name an SQS queue ARN designates, or ``None`` if it is not one."""
    match = _ARN.match(arn)
    if not match or not QUEUE_NAME.match(match.group(3)):
        return None
    region, account, name = match.groups()
    return queue_names.sqs_store_name(account, region, name)


def queue_name_of(store_name: str) -> str:
    parts = split_store_name(store_name)
    return parts[2] if parts else store_name


#: ``base64.urlsafe_b64encode`` and ``urlsafe_b64decode`` are binascii's standard alphabet with
#: these two characters swapped (and ``b64decode`` without ``validate``: ``a2b_base64`` as it is)
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def wrap_receipt(store_queue: str, receipt: str, received_at: float) -> str:
    """A receipt handle: ``base64.urlsafe_b64encode`` of the queue, receive time (ms) and store
    receipt, one a line (binascii called directly)."""
    raw = f"{store_queue}\n{int(received_at * 1000)}\n{receipt}".encode()
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URLSAFE).decode("ascii")


def unwrap_receipt(store_queue: str, handle: str) -> tuple[str, float]:
    """The store receipt and receive time (s) inside ``handle``; it must belong to ``store_queue``."""
    try:
        raw = binascii.a2b_base64(handle.encode("ascii").translate(_FROM_URLSAFE)).decode("utf-8")
        queue, received_ms, receipt = raw.split("\n", 2)
        received_at = int(received_ms) / 1000.0
    except (ValueError, UnicodeError, binascii.Error):
        raise ReceiptHandleIsInvalid() from None
    if queue != store_queue or not receipt:
        raise ReceiptHandleIsInvalid()
    return receipt, received_at
