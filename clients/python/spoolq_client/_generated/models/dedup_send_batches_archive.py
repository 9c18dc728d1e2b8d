from typing import Literal

DedupSendBatchesArchive = Literal['false', 'true']

DEDUP_SEND_BATCHES_ARCHIVE_VALUES: set[DedupSendBatchesArchive] = { 'false', 'true',  }

def check_dedup_send_batches_archive(value: str) -> DedupSendBatchesArchive:
    if value in DEDUP_SEND_BATCHES_ARCHIVE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SEND_BATCHES_ARCHIVE_VALUES!r}")
