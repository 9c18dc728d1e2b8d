from typing import Literal

DedupSendBatchesAtMostOnce = Literal['false', 'true']

DEDUP_SEND_BATCHES_AT_MOST_ONCE_VALUES: set[DedupSendBatchesAtMostOnce] = { 'false', 'true',  }

def check_dedup_send_batches_at_most_once(value: str) -> DedupSendBatchesAtMostOnce:
    if value in DEDUP_SEND_BATCHES_AT_MOST_ONCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SEND_BATCHES_AT_MOST_ONCE_VALUES!r}")
