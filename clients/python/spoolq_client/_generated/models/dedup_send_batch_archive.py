from typing import Literal

DedupSendBatchArchive = Literal['false', 'true']

DEDUP_SEND_BATCH_ARCHIVE_VALUES: set[DedupSendBatchArchive] = { 'false', 'true',  }

def check_dedup_send_batch_archive(value: str) -> DedupSendBatchArchive:
    if value in DEDUP_SEND_BATCH_ARCHIVE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SEND_BATCH_ARCHIVE_VALUES!r}")
