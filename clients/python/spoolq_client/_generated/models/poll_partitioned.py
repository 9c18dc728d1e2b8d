from typing import Literal

PollPartitioned = Literal['FALSE', 'false', 'true', 'TRUE']

POLL_PARTITIONED_VALUES: set[PollPartitioned] = { 'FALSE', 'false', 'true', 'TRUE',  }

def check_poll_partitioned(value: str) -> PollPartitioned:
    if value in POLL_PARTITIONED_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POLL_PARTITIONED_VALUES!r}")
