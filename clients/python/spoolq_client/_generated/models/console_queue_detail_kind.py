from typing import Literal

ConsoleQueueDetailKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

CONSOLE_QUEUE_DETAIL_KIND_VALUES: set[ConsoleQueueDetailKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_console_queue_detail_kind(value: str) -> ConsoleQueueDetailKind:
    if value in CONSOLE_QUEUE_DETAIL_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_QUEUE_DETAIL_KIND_VALUES!r}")
