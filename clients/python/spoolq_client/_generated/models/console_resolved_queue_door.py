from typing import Literal

ConsoleResolvedQueueDoor = Literal['dedupq', 'disque', 'mq', 'queue', 'sqs']

CONSOLE_RESOLVED_QUEUE_DOOR_VALUES: set[ConsoleResolvedQueueDoor] = { 'dedupq', 'disque', 'mq', 'queue', 'sqs',  }

def check_console_resolved_queue_door(value: str) -> ConsoleResolvedQueueDoor:
    if value in CONSOLE_RESOLVED_QUEUE_DOOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_RESOLVED_QUEUE_DOOR_VALUES!r}")
