from typing import Literal

QueueSettingsKind = Literal['dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo']

QUEUE_SETTINGS_KIND_VALUES: set[QueueSettingsKind] = { 'dedup', 'disque', 'emodb', 'mq', 'sqs', 'sqs-fifo',  }

def check_queue_settings_kind(value: str) -> QueueSettingsKind:
    if value in QUEUE_SETTINGS_KIND_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {QUEUE_SETTINGS_KIND_VALUES!r}")
