from typing import Literal

AckPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

ACK_PARTITIONED_VALUES: set[AckPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_ack_partitioned(value: str) -> AckPartitioned:
    if value in ACK_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ACK_PARTITIONED_VALUES!r}")
