from typing import Literal

SendAtMostOnce = Literal['false', 'true']

SEND_AT_MOST_ONCE_VALUES: set[SendAtMostOnce] = { 'false', 'true',  }

def check_send_at_most_once(value: str) -> SendAtMostOnce:
    if value in SEND_AT_MOST_ONCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEND_AT_MOST_ONCE_VALUES!r}")
