from typing import Literal

PeekMeta = Literal['false', 'true']

PEEK_META_VALUES: set[PeekMeta] = { 'false', 'true',  }

def check_peek_meta(value: str) -> PeekMeta:
    if value in PEEK_META_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {PEEK_META_VALUES!r}")
