from typing import Literal

PollMeta = Literal['false', 'true']

POLL_META_VALUES: set[PollMeta] = { 'false', 'true',  }

def check_poll_meta(value: str) -> PollMeta:
    if value in POLL_META_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POLL_META_VALUES!r}")
