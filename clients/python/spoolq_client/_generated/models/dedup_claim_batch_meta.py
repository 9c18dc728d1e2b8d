from typing import Literal

DedupClaimBatchMeta = Literal['false', 'true']

DEDUP_CLAIM_BATCH_META_VALUES: set[DedupClaimBatchMeta] = { 'false', 'true',  }

def check_dedup_claim_batch_meta(value: str) -> DedupClaimBatchMeta:
    if value in DEDUP_CLAIM_BATCH_META_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_CLAIM_BATCH_META_VALUES!r}")
