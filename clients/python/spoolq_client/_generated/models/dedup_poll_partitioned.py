from typing import Literal

DedupPollPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_POLL_PARTITIONED_VALUES: set[DedupPollPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_poll_partitioned(value: str) -> DedupPollPartitioned:
    if value in DEDUP_POLL_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_POLL_PARTITIONED_VALUES!r}")
