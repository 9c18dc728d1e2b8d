from typing import Literal

DedupRenewPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_RENEW_PARTITIONED_VALUES: set[DedupRenewPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_renew_partitioned(value: str) -> DedupRenewPartitioned:
    if value in DEDUP_RENEW_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_RENEW_PARTITIONED_VALUES!r}")
