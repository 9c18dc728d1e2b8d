from typing import Literal

ConsoleTopicKind = Literal['sns', 'sns-fifo']

CONSOLE_TOPIC_KIND_VALUES: set[ConsoleTopicKind] = { 'sns', 'sns-fifo',  }

def check_console_topic_kind(value: str) -> ConsoleTopicKind:
    if value in CONSOLE_TOPIC_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONSOLE_TOPIC_KIND_VALUES!r}")
