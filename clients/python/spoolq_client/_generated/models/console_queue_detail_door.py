from typing import Literal

ConsoleQueueDetailDoor = Literal['dedupq', 'disque', 'mq', 'queue', 'sqs']

CONSOLE_QUEUE_DETAIL_DOOR_VALUES: set[ConsoleQueueDetailDoor] = { 'dedupq', 'disque', 'mq', 'queue', 'sqs',  }

def check_console_queue_detail_door(value: str) -> ConsoleQueueDetailDoor:
    if value in CONSOLE_QUEUE_DETAIL_DOOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_QUEUE_DETAIL_DOOR_VALUES!r}")
