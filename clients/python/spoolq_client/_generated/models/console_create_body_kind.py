from typing import Literal

ConsoleCreateBodyKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

CONSOLE_CREATE_BODY_KIND_VALUES: set[ConsoleCreateBodyKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_console_create_body_kind(value: str) -> ConsoleCreateBodyKind:
    if value in CONSOLE_CREATE_BODY_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_CREATE_BODY_KIND_VALUES!r}")
