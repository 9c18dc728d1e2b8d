from typing import Literal

SendBatchesAtMostOnce = Literal['false', 'true']

SEND_BATCHES_AT_MOST_ONCE_VALUES: set[SendBatchesAtMostOnce] = { 'false', 'true',  }

def check_send_batches_at_most_once(value: str) -> SendBatchesAtMostOnce:
    if value in SEND_BATCHES_AT_MOST_ONCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEND_BATCHES_AT_MOST_ONCE_VALUES!r}")
