from typing import Literal

DedupPollMeta = Literal['false', 'true']

DEDUP_POLL_META_VALUES: set[DedupPollMeta] = { 'false', 'true',  }

def check_dedup_poll_meta(value: str) -> DedupPollMeta:
    if value in DEDUP_POLL_META_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_POLL_META_VALUES!r}")
