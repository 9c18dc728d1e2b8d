from typing import Literal

SendBatchArchive = Literal['false', 'true']

SEND_BATCH_ARCHIVE_VALUES: set[SendBatchArchive] = { 'false', 'true',  }

def check_send_batch_archive(value: str) -> SendBatchArchive:
    if value in SEND_BATCH_ARCHIVE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEND_BATCH_ARCHIVE_VALUES!r}")
