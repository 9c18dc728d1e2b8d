from typing import Literal

SendBatchAtMostOnce = Literal['false', 'true']

SEND_BATCH_AT_MOST_ONCE_VALUES: set[SendBatchAtMostOnce] = { 'false', 'true',  }

def check_send_batch_at_most_once(value: str) -> SendBatchAtMostOnce:
    if value in SEND_BATCH_AT_MOST_ONCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEND_BATCH_AT_MOST_ONCE_VALUES!r}")
