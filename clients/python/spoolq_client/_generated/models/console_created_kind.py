from typing import Literal

ConsoleCreatedKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

CONSOLE_CREATED_KIND_VALUES: set[ConsoleCreatedKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_console_created_kind(value: str) -> ConsoleCreatedKind:
    if value in CONSOLE_CREATED_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_CREATED_KIND_VALUES!r}")
