from typing import Literal

UnclaimAllPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

UNCLAIM_ALL_PARTITIONED_VALUES: set[UnclaimAllPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_unclaim_all_partitioned(value: str) -> UnclaimAllPartitioned:
    if value in UNCLAIM_ALL_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {UNCLAIM_ALL_PARTITIONED_VALUES!r}")
