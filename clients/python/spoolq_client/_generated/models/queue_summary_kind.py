from typing import Literal

QueueSummaryKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

QUEUE_SUMMARY_KIND_VALUES: set[QueueSummaryKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_queue_summary_kind(value: str) -> QueueSummaryKind:
    if value in QUEUE_SUMMARY_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {QUEUE_SUMMARY_KIND_VALUES!r}")
