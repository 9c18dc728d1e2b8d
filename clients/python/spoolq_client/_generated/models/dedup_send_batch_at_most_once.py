from typing import Literal

DedupSendBatchAtMostOnce = Literal['false', 'true']

DEDUP_SEND_BATCH_AT_MOST_ONCE_VALUES: set[DedupSendBatchAtMostOnce] = { 'false', 'true',  }

def check_dedup_send_batch_at_most_once(value: str) -> DedupSendBatchAtMostOnce:
    if value in DEDUP_SEND_BATCH_AT_MOST_ONCE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SEND_BATCH_AT_MOST_ONCE_VALUES!r}")
