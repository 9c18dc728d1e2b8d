from typing import Literal

PurgePartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

PURGE_PARTITIONED_VALUES: set[PurgePartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_purge_partitioned(value: str) -> PurgePartitioned:
    if value in PURGE_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {PURGE_PARTITIONED_VALUES!r}")
