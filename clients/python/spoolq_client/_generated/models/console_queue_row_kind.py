from typing import Literal

ConsoleQueueRowKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

CONSOLE_QUEUE_ROW_KIND_VALUES: set[ConsoleQueueRowKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_console_queue_row_kind(value: str) -> ConsoleQueueRowKind:
    if value in CONSOLE_QUEUE_ROW_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_QUEUE_ROW_KIND_VALUES!r}")
