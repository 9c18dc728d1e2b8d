from typing import Literal

ConsoleResolvedQueueKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

CONSOLE_RESOLVED_QUEUE_KIND_VALUES: set[ConsoleResolvedQueueKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_console_resolved_queue_kind(value: str) -> ConsoleResolvedQueueKind:
    if value in CONSOLE_RESOLVED_QUEUE_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_RESOLVED_QUEUE_KIND_VALUES!r}")
