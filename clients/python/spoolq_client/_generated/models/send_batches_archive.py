from typing import Literal

SendBatchesArchive = Literal['false', 'true']

SEND_BATCHES_ARCHIVE_VALUES: set[SendBatchesArchive] = { 'false', 'true',  }

def check_send_batches_archive(value: str) -> SendBatchesArchive:
    if value in SEND_BATCHES_ARCHIVE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEND_BATCHES_ARCHIVE_VALUES!r}")
