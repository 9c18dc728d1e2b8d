from typing import Literal

ConsoleSendBodyFormat = Literal['json', 'text']

CONSOLE_SEND_BODY_FORMAT_VALUES: set[ConsoleSendBodyFormat] = { 'json', 'text',  }

def check_console_send_body_format(value: str) -> ConsoleSendBodyFormat:
    if value in CONSOLE_SEND_BODY_FORMAT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_SEND_BODY_FORMAT_VALUES!r}")
