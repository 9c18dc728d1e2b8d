from typing import Literal

DedupPeekPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_PEEK_PARTITIONED_VALUES: set[DedupPeekPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_peek_partitioned(value: str) -> DedupPeekPartitioned:
    if value in DEDUP_PEEK_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_PEEK_PARTITIONED_VALUES!r}")
