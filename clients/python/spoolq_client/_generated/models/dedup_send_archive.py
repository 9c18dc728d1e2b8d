from typing import Literal

DedupSendArchive = Literal['false', 'true']

DEDUP_SEND_ARCHIVE_VALUES: set[DedupSendArchive] = { 'false', 'true',  }

def check_dedup_send_archive(value: str) -> DedupSendArchive:
    if value in DEDUP_SEND_ARCHIVE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SEND_ARCHIVE_VALUES!r}")
