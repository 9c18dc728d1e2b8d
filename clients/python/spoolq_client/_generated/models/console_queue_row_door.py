from typing import Literal

ConsoleQueueRowDoor = Literal['dedupq', 'disque', 'mq', 'queue', 'sqs']

CONSOLE_QUEUE_ROW_DOOR_VALUES: set[ConsoleQueueRowDoor] = { 'dedupq', 'disque', 'mq', 'queue', 'sqs',  }

def check_console_queue_row_door(value: str) -> ConsoleQueueRowDoor:
    if value in CONSOLE_QUEUE_ROW_DOOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_QUEUE_ROW_DOOR_VALUES!r}")
