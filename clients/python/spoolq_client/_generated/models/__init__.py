""" Contains all the data models used in inputs/outputs """

from .ack_partitioned import AckPartitioned
from .claim_count_partitioned import ClaimCountPartitioned
from .dedup_ack_partitioned import DedupAckPartitioned
from .dedup_claim_count_partitioned import DedupClaimCountPartitioned
from .dedup_peek_meta import DedupPeekMeta
from .dedup_peek_partitioned import DedupPeekPartitioned
from .dedup_poll_meta import DedupPollMeta
from .dedup_poll_partitioned import DedupPollPartitioned
from .dedup_purge_partitioned import DedupPurgePartitioned
from .dedup_renew_partitioned import DedupRenewPartitioned
from .dedup_send_at_most_once import DedupSendAtMostOnce
from .dedup_send_batch_at_most_once import DedupSendBatchAtMostOnce
from .dedup_send_batches_at_most_once import DedupSendBatchesAtMostOnce
from .dedup_send_batches_body import DedupSendBatchesBody
from .dedup_size_partitioned import DedupSizePartitioned
from .dedup_unclaim_all_partitioned import DedupUnclaimAllPartitioned
from .health import Health
from .health_status import HealthStatus
from .health_store import HealthStore
from .json_error import JsonError
from .message import Message
from .move_ref import MoveRef
from .move_status import MoveStatus
from .move_status_status import MoveStatusStatus
from .not_authorized import NotAuthorized
from .peek_meta import PeekMeta
from .poll_meta import PollMeta
from .poll_partitioned import PollPartitioned
from .purge_partitioned import PurgePartitioned
from .queue_forbidden import QueueForbidden
from .queue_summary import QueueSummary
from .queue_summary_kind import QueueSummaryKind
from .renew_partitioned import RenewPartitioned
from .send_at_most_once import SendAtMostOnce
from .send_batch_at_most_once import SendBatchAtMostOnce
from .send_batches_at_most_once import SendBatchesAtMostOnce
from .send_batches_body import SendBatchesBody
from .success import Success
from .unavailable import Unavailable
from .unclaim_all_partitioned import UnclaimAllPartitioned
from .unknown_move import UnknownMove
from .validation_errors import ValidationErrors

__all__ = (
    "AckPartitioned",
    "ClaimCountPartitioned",
    "DedupAckPartitioned",
    "DedupClaimCountPartitioned",
    "DedupPeekMeta",
    "DedupPeekPartitioned",
    "DedupPollMeta",
    "DedupPollPartitioned",
    "DedupPurgePartitioned",
    "DedupRenewPartitioned",
    "DedupSendAtMostOnce",
    "DedupSendBatchAtMostOnce",
    "DedupSendBatchesAtMostOnce",
    "DedupSendBatchesBody",
    "DedupSizePartitioned",
    "DedupUnclaimAllPartitioned",
    "Health",
    "HealthStatus",
    "HealthStore",
    "JsonError",
    "Message",
    "MoveRef",
    "MoveStatus",
    "MoveStatusStatus",
    "NotAuthorized",
    "PeekMeta",
    "PollMeta",
    "PollPartitioned",
    "PurgePartitioned",
    "QueueForbidden",
    "QueueSummary",
    "QueueSummaryKind",
    "RenewPartitioned",
    "SendAtMostOnce",
    "SendBatchAtMostOnce",
    "SendBatchesAtMostOnce",
    "SendBatchesBody",
    "Success",
    "Unavailable",
    "UnclaimAllPartitioned",
    "UnknownMove",
    "ValidationErrors",
)
