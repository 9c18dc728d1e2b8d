from typing import Literal

RenewPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

RENEW_PARTITIONED_VALUES: set[RenewPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_renew_partitioned(value: str) -> RenewPartitioned:
    if value in RENEW_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {RENEW_PARTITIONED_VALUES!r}")
