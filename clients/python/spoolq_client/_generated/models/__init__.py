""" Contains all the data models used in inputs/outputs """

from .ack_partitioned import AckPartitioned
from .batch_count import BatchCount
from .claim_batch_meta import ClaimBatchMeta
from .claim_count_partitioned import ClaimCountPartitioned
from .console_can import ConsoleCan
from .console_confirm_body import ConsoleConfirmBody
from .console_consumers import ConsoleConsumers
from .console_create_body import ConsoleCreateBody
from .console_create_body_door import ConsoleCreateBodyDoor
from .console_create_body_kind import ConsoleCreateBodyKind
from .console_create_body_tags_type_0 import ConsoleCreateBodyTagsType0
from .console_created import ConsoleCreated
from .console_created_door import ConsoleCreatedDoor
from .console_created_kind import ConsoleCreatedKind
from .console_damaged import ConsoleDamaged
from .console_dead_letter import ConsoleDeadLetter
from .console_delete_empty import ConsoleDeleteEmpty
from .console_delete_empty_body import ConsoleDeleteEmptyBody
from .console_done import ConsoleDone
from .console_door_consumers import ConsoleDoorConsumers
from .console_error import ConsoleError
from .console_move import ConsoleMove
from .console_move_body import ConsoleMoveBody
from .console_move_state import ConsoleMoveState
from .console_ok import ConsoleOk
from .console_peek import ConsolePeek
from .console_peeked import ConsolePeeked
from .console_peeked_attributes import ConsolePeekedAttributes
from .console_peeked_encoding import ConsolePeekedEncoding
from .console_queue_detail import ConsoleQueueDetail
from .console_queue_detail_dead_letter_type_0_type_0 import ConsoleQueueDetailDeadLetterType0Type0
from .console_queue_detail_door import ConsoleQueueDetailDoor
from .console_queue_detail_kind import ConsoleQueueDetailKind
from .console_queue_detail_tags import ConsoleQueueDetailTags
from .console_queue_list import ConsoleQueueList
from .console_queue_rates import ConsoleQueueRates
from .console_queue_row import ConsoleQueueRow
from .console_queue_row_dead_letter_type_0_type_0 import ConsoleQueueRowDeadLetterType0Type0
from .console_queue_row_door import ConsoleQueueRowDoor
from .console_queue_row_kind import ConsoleQueueRowKind
from .console_rates import ConsoleRates
from .console_rates_queues import ConsoleRatesQueues
from .console_receipts_body import ConsoleReceiptsBody
from .console_receive_body import ConsoleReceiveBody
from .console_received import ConsoleReceived
from .console_received_message import ConsoleReceivedMessage
from .console_received_message_attributes import ConsoleReceivedMessageAttributes
from .console_received_message_encoding import ConsoleReceivedMessageEncoding
from .console_resolved import ConsoleResolved
from .console_resolved_queue import ConsoleResolvedQueue
from .console_resolved_queue_door import ConsoleResolvedQueueDoor
from .console_resolved_queue_kind import ConsoleResolvedQueueKind
from .console_send_body import ConsoleSendBody
from .console_send_body_attributes_type_0 import ConsoleSendBodyAttributesType0
from .console_send_body_format import ConsoleSendBodyFormat
from .console_sent import ConsoleSent
from .console_sent_format import ConsoleSentFormat
from .console_server import ConsoleServer
from .console_server_flush_batch_buckets import ConsoleServerFlushBatchBuckets
from .console_server_flush_seconds_buckets import ConsoleServerFlushSecondsBuckets
from .console_session import ConsoleSession
from .console_settings import ConsoleSettings
from .console_subscription import ConsoleSubscription
from .console_topic import ConsoleTopic
from .console_topic_kind import ConsoleTopicKind
from .console_topic_list import ConsoleTopicList
from .console_topic_tags import ConsoleTopicTags
from .console_topic_totals import ConsoleTopicTotals
from .console_totals import ConsoleTotals
from .console_visibility_body import ConsoleVisibilityBody
from .dead_letter import DeadLetter
from .dedup_ack_partitioned import DedupAckPartitioned
from .dedup_claim_batch_meta import DedupClaimBatchMeta
from .dedup_claim_count_partitioned import DedupClaimCountPartitioned
from .dedup_peek_meta import DedupPeekMeta
from .dedup_peek_partitioned import DedupPeekPartitioned
from .dedup_poll_meta import DedupPollMeta
from .dedup_poll_partitioned import DedupPollPartitioned
from .dedup_purge_partitioned import DedupPurgePartitioned
from .dedup_renew_partitioned import DedupRenewPartitioned
from .dedup_send_archive import DedupSendArchive
from .dedup_send_at_most_once import DedupSendAtMostOnce
from .dedup_send_batch_archive import DedupSendBatchArchive
from .dedup_send_batch_at_most_once import DedupSendBatchAtMostOnce
from .dedup_send_batches_archive import DedupSendBatchesArchive
from .dedup_send_batches_at_most_once import DedupSendBatchesAtMostOnce
from .dedup_send_batches_body import DedupSendBatchesBody
from .dedup_size_partitioned import DedupSizePartitioned
from .dedup_unclaim_all_partitioned import DedupUnclaimAllPartitioned
from .health import Health
from .health_config import HealthConfig
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
from .queue_settings import QueueSettings
from .queue_settings_change import QueueSettingsChange
from .queue_settings_kind import QueueSettingsKind
from .queue_summary import QueueSummary
from .queue_summary_kind import QueueSummaryKind
from .renew_partitioned import RenewPartitioned
from .send_archive import SendArchive
from .send_at_most_once import SendAtMostOnce
from .send_batch_archive import SendBatchArchive
from .send_batch_at_most_once import SendBatchAtMostOnce
from .send_batches_archive import SendBatchesArchive
from .send_batches_at_most_once import SendBatchesAtMostOnce
from .send_batches_body import SendBatchesBody
from .success import Success
from .unavailable import Unavailable
from .unclaim_all_partitioned import UnclaimAllPartitioned
from .unknown_move import UnknownMove
from .validation_errors import ValidationErrors

__all__ = (
    "AckPartitioned",
    "BatchCount",
    "ClaimBatchMeta",
    "ClaimCountPartitioned",
    "ConsoleCan",
    "ConsoleConfirmBody",
    "ConsoleConsumers",
    "ConsoleCreateBody",
    "ConsoleCreateBodyDoor",
    "ConsoleCreateBodyKind",
    "ConsoleCreateBodyTagsType0",
    "ConsoleCreated",
    "ConsoleCreatedDoor",
    "ConsoleCreatedKind",
    "ConsoleDamaged",
    "ConsoleDeadLetter",
    "ConsoleDeleteEmpty",
    "ConsoleDeleteEmptyBody",
    "ConsoleDone",
    "ConsoleDoorConsumers",
    "ConsoleError",
    "ConsoleMove",
    "ConsoleMoveBody",
    "ConsoleMoveState",
    "ConsoleOk",
    "ConsolePeek",
    "ConsolePeeked",
    "ConsolePeekedAttributes",
    "ConsolePeekedEncoding",
    "ConsoleQueueDetail",
    "ConsoleQueueDetailDeadLetterType0Type0",
    "ConsoleQueueDetailDoor",
    "ConsoleQueueDetailKind",
    "ConsoleQueueDetailTags",
    "ConsoleQueueList",
    "ConsoleQueueRates",
    "ConsoleQueueRow",
    "ConsoleQueueRowDeadLetterType0Type0",
    "ConsoleQueueRowDoor",
    "ConsoleQueueRowKind",
    "ConsoleRates",
    "ConsoleRatesQueues",
    "ConsoleReceiptsBody",
    "ConsoleReceiveBody",
    "ConsoleReceived",
    "ConsoleReceivedMessage",
    "ConsoleReceivedMessageAttributes",
    "ConsoleReceivedMessageEncoding",
    "ConsoleResolved",
    "ConsoleResolvedQueue",
    "ConsoleResolvedQueueDoor",
    "ConsoleResolvedQueueKind",
    "ConsoleSendBody",
    "ConsoleSendBodyAttributesType0",
    "ConsoleSendBodyFormat",
    "ConsoleSent",
    "ConsoleSentFormat",
    "ConsoleServer",
    "ConsoleServerFlushBatchBuckets",
    "ConsoleServerFlushSecondsBuckets",
    "ConsoleSession",
    "ConsoleSettings",
    "ConsoleSubscription",
    "ConsoleTopic",
    "ConsoleTopicKind",
    "ConsoleTopicList",
    "ConsoleTopicTags",
    "ConsoleTopicTotals",
    "ConsoleTotals",
    "ConsoleVisibilityBody",
    "DeadLetter",
    "DedupAckPartitioned",
    "DedupClaimBatchMeta",
    "DedupClaimCountPartitioned",
    "DedupPeekMeta",
    "DedupPeekPartitioned",
    "DedupPollMeta",
    "DedupPollPartitioned",
    "DedupPurgePartitioned",
    "DedupRenewPartitioned",
    "DedupSendArchive",
    "DedupSendAtMostOnce",
    "DedupSendBatchArchive",
    "DedupSendBatchAtMostOnce",
    "DedupSendBatchesArchive",
    "DedupSendBatchesAtMostOnce",
    "DedupSendBatchesBody",
    "DedupSizePartitioned",
    "DedupUnclaimAllPartitioned",
    "Health",
    "HealthConfig",
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
    "QueueSettings",
    "QueueSettingsChange",
    "QueueSettingsKind",
    "QueueSummary",
    "QueueSummaryKind",
    "RenewPartitioned",
    "SendArchive",
    "SendAtMostOnce",
    "SendBatchArchive",
    "SendBatchAtMostOnce",
    "SendBatchesArchive",
    "SendBatchesAtMostOnce",
    "SendBatchesBody",
    "Success",
    "Unavailable",
    "UnclaimAllPartitioned",
    "UnknownMove",
    "ValidationErrors",
)
