from typing import Literal

DedupSizePartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_SIZE_PARTITIONED_VALUES: set[DedupSizePartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_size_partitioned(value: str) -> DedupSizePartitioned:
    if value in DEDUP_SIZE_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_SIZE_PARTITIONED_VALUES!r}")
