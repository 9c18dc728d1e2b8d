"""EmoDB QueueService (``/queue/1``) and DedupQueueService (``/dedupq/1``) front doors (:mod:`.door`)."""

from spoolq.http.emodb.door import EmoDoor, create_blueprint

__all__ = ["EmoDoor", "create_blueprint"]
