from typing import Literal

DedupUnclaimAllPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_UNCLAIM_ALL_PARTITIONED_VALUES: set[DedupUnclaimAllPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_unclaim_all_partitioned(value: str) -> DedupUnclaimAllPartitioned:
    if value in DEDUP_UNCLAIM_ALL_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_UNCLAIM_ALL_PARTITIONED_VALUES!r}")
