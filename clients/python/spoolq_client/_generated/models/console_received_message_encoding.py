from typing import Literal

ConsoleReceivedMessageEncoding = Literal['base64', 'utf-8']

CONSOLE_RECEIVED_MESSAGE_ENCODING_VALUES: set[ConsoleReceivedMessageEncoding] = { 'base64', 'utf-8',  }

def check_console_received_message_encoding(value: str) -> ConsoleReceivedMessageEncoding:
    if value in CONSOLE_RECEIVED_MESSAGE_ENCODING_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_RECEIVED_MESSAGE_ENCODING_VALUES!r}")
