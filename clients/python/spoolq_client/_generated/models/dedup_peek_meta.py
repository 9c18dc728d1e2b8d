from typing import Literal

DedupPeekMeta = Literal['false', 'true']

DEDUP_PEEK_META_VALUES: set[DedupPeekMeta] = { 'false', 'true',  }

def check_dedup_peek_meta(value: str) -> DedupPeekMeta:
    if value in DEDUP_PEEK_META_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_PEEK_META_VALUES!r}")
