from typing import Literal

DedupPurgePartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_PURGE_PARTITIONED_VALUES: set[DedupPurgePartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_purge_partitioned(value: str) -> DedupPurgePartitioned:
    if value in DEDUP_PURGE_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_PURGE_PARTITIONED_VALUES!r}")
