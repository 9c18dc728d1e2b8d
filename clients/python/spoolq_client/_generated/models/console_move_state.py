from typing import Literal

ConsoleMoveState = Literal['CANCELLED', 'COMPLETE', 'ERROR', 'IN_PROGRESS']

CONSOLE_MOVE_STATE_VALUES: set[ConsoleMoveState] = { 'CANCELLED', 'COMPLETE', 'ERROR', 'IN_PROGRESS',  }

def check_console_move_state(value: str) -> ConsoleMoveState:
    if value in CONSOLE_MOVE_STATE_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_MOVE_STATE_VALUES!r}")
