from typing import Literal

ClaimCountPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

CLAIM_COUNT_PARTITIONED_VALUES: set[ClaimCountPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_claim_count_partitioned(value: str) -> ClaimCountPartitioned:
    if value in CLAIM_COUNT_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CLAIM_COUNT_PARTITIONED_VALUES!r}")
