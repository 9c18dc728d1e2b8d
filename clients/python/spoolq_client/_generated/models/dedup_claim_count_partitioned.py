from typing import Literal

DedupClaimCountPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_CLAIM_COUNT_PARTITIONED_VALUES: set[DedupClaimCountPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_claim_count_partitioned(value: str) -> DedupClaimCountPartitioned:
    if value in DEDUP_CLAIM_COUNT_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_CLAIM_COUNT_PARTITIONED_VALUES!r}")
