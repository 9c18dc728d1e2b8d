from typing import Literal

ConsolePeekedEncoding = Literal['base64', 'utf-8']

CONSOLE_PEEKED_ENCODING_VALUES: set[ConsolePeekedEncoding] = { 'base64', 'utf-8',  }

def check_console_peeked_encoding(value: str) -> ConsolePeekedEncoding:
    if value in CONSOLE_PEEKED_ENCODING_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_PEEKED_ENCODING_VALUES!r}")
