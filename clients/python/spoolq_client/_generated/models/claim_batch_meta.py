from typing import Literal

ClaimBatchMeta = Literal['false', 'true']

CLAIM_BATCH_META_VALUES: set[ClaimBatchMeta] = { 'false', 'true',  }

def check_claim_batch_meta(value: str) -> ClaimBatchMeta:
    if value in CLAIM_BATCH_META_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CLAIM_BATCH_META_VALUES!r}")
