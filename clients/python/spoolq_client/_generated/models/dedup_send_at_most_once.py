from typing import Literal

DedupSendAtMostOnce = Literal['false', 'true']

DEDUP_SEND_AT_MOST_ONCE_VALUES: set[DedupSendAtMostOnce] = { 'false', 'true',  }

def check_dedup_send_at_most_once(value: str) -> DedupSendAtMostOnce:
    if value in DEDUP_SEND_AT_MOST_ONCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SEND_AT_MOST_ONCE_VALUES!r}")
