from typing import Literal

ConsoleCreateBodyDoor = Literal['dedupq', 'disque', 'mq', 'queue', 'sqs']

CONSOLE_CREATE_BODY_DOOR_VALUES: set[ConsoleCreateBodyDoor] = { 'dedupq', 'disque', 'mq', 'queue', 'sqs',  }

def check_console_create_body_door(value: str) -> ConsoleCreateBodyDoor:
    if value in CONSOLE_CREATE_BODY_DOOR_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_CREATE_BODY_DOOR_VALUES!r}")
