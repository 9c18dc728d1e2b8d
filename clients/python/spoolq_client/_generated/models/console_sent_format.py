from typing import Literal

ConsoleSentFormat = Literal['json', 'text']

CONSOLE_SENT_FORMAT_VALUES: set[ConsoleSentFormat] = { 'json', 'text',  }

def check_console_sent_format(value: str) -> ConsoleSentFormat:
    if value in CONSOLE_SENT_FORMAT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_SENT_FORMAT_VALUES!r}")
