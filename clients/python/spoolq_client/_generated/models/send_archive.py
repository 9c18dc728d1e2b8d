from typing import Literal

SendArchive = Literal['false', 'true']

SEND_ARCHIVE_VALUES: set[SendArchive] = { 'false', 'true',  }

def check_send_archive(value: str) -> SendArchive:
    if value in SEND_ARCHIVE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SEND_ARCHIVE_VALUES!r}")
