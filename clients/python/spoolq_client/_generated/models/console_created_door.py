from typing import Literal

ConsoleCreatedDoor = Literal['dedupq', 'disque', 'mq', 'queue', 'sqs']

CONSOLE_CREATED_DOOR_VALUES: set[ConsoleCreatedDoor] = { 'dedupq', 'disque', 'mq', 'queue', 'sqs',  }

def check_console_created_door(value: str) -> ConsoleCreatedDoor:
    if value in CONSOLE_CREATED_DOOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_CREATED_DOOR_VALUES!r}")
