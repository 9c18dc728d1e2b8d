from typing import Literal

DedupAckPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

DEDUP_ACK_PARTITIONED_VALUES: set[DedupAckPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_dedup_ack_partitioned(value: str) -> DedupAckPartitioned:
    if value in DEDUP_ACK_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {DEDUP_ACK_PARTITIONED_VALUES!r}")
