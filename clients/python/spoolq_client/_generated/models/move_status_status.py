from typing import Literal

MoveStatusStatus = Literal['COMPLETE', 'ERROR', 'IN_PROGRESS']

MOVE_STATUS_STATUS_VALUES: set[MoveStatusStatus] = { 'COMPLETE', 'ERROR', 'IN_PROGRESS',  }

def check_move_status_status(value: str) -> MoveStatusStatus:
    if value in MOVE_STATUS_STATUS_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {MOVE_STATUS_STATUS_VALUES!r}")
