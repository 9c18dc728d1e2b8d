"""spoolq's Python client.

* :class:`SpoolqClient`: every EmoDB verb (send, send_batch, poll, peek, renew, release, ack, size,
  claim_count, purge, unclaim_all, move, move_status, list_queues) as a typed method.
* :class:`Consumer`: an SQS-style poll loop (long polling, heartbeats, graceful SIGTERM).
* :class:`Producer`: batched sends with safe retries.

The code generated from ``openapi.yaml`` lives in :mod:`spoolq_client._generated` (``api``,
``models``, ``Client`` / ``AuthenticatedClient``, sync and asyncio functions per operation);
regenerate it with ``scripts/generate-client``, never by hand. Everything else is hand-written.
The client commands (``spoolq send``, ``poll``, ... or ``spoolq-client send`` where the server is not
installed) are in :mod:`spoolq_client.cli`.
"""

from spoolq_client._generated.client import AuthenticatedClient, Client
from spoolq_client._generated.models import Message, MoveStatus, QueueSummary
from spoolq_client.client import API_KEY_HEADER, SpoolqClient
from spoolq_client.consumer import Consumer, ConsumerStats
from spoolq_client.errors import BadRequest, NotAuthorized, NotFound, SpoolqApiError, Unavailable
from spoolq_client.producer import AmbiguousSend, Producer, ProducerStats

__version__ = "0.1.0"

__all__ = [
    "API_KEY_HEADER",
    "AmbiguousSend",
    "AuthenticatedClient",
    "BadRequest",
    "Client",
    "Consumer",
    "ConsumerStats",
    "Message",
    "MoveStatus",
    "NotAuthorized",
    "NotFound",
    "Producer",
    "ProducerStats",
    "QueueSummary",
    "SpoolqApiError",
    "SpoolqClient",
    "Unavailable",
]
