from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.queue_settings_kind import check_queue_settings_kind
from ..models.queue_settings_kind import QueueSettingsKind
from typing import cast

if TYPE_CHECKING:
  from ..models.dead_letter import DeadLetter





T = TypeVar("T", bound="QueueSettings")



@_attrs_define
class QueueSettings:
    """ 
        Attributes:
            queue (str): the store name
            kind (QueueSettingsKind): the kind of queue, as `spoolq create --kind` names it
            visibility_timeout (int): seconds a delivery stays claimed when the poll names no time
            delay (int): seconds before a new message becomes visible (SQS queues: at most 900)
            retention (int): unconsumed messages older than this many seconds are dropped (SQS queues: 60-1209600)
            receive_wait (int): long-poll seconds of a poll that names no wait
            max_message_bytes (int): largest message body in bytes (SQS queues: 1024-1048576)
            dead_letter (DeadLetter | None): null: no dead-letter queue
            archive (bool): keep acknowledged messages for audit (spoolq pipeline audit)
            archive_retention (int): seconds archived messages are kept
     """

    queue: str
    kind: QueueSettingsKind
    visibility_timeout: int
    delay: int
    retention: int
    receive_wait: int
    max_message_bytes: int
    dead_letter: DeadLetter | None
    archive: bool
    archive_retention: int





    def to_dict(self) -> dict[str, Any]:
        from ..models.dead_letter import DeadLetter # noqa: PLC0415
        queue = self.queue

        kind: str = self.kind

        visibility_timeout = self.visibility_timeout

        delay = self.delay

        retention = self.retention

        receive_wait = self.receive_wait

        max_message_bytes = self.max_message_bytes

        dead_letter: dict[str, Any] | None
        if isinstance(self.dead_letter, DeadLetter):
            dead_letter = self.dead_letter.to_dict()
        else:
            dead_letter = self.dead_letter

        archive = self.archive

        archive_retention = self.archive_retention


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queue": queue,
            "kind": kind,
            "visibility_timeout": visibility_timeout,
            "delay": delay,
            "retention": retention,
            "receive_wait": receive_wait,
            "max_message_bytes": max_message_bytes,
            "dead_letter": dead_letter,
            "archive": archive,
            "archive_retention": archive_retention,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dead_letter import DeadLetter # noqa: PLC0415
        d = dict(src_dict)
        queue = d.pop("queue")

        kind = check_queue_settings_kind(d.pop("kind"))




        visibility_timeout = d.pop("visibility_timeout")

        delay = d.pop("delay")

        retention = d.pop("retention")

        receive_wait = d.pop("receive_wait")

        max_message_bytes = d.pop("max_message_bytes")

        def _parse_dead_letter(data: object) -> DeadLetter | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dead_letter_type_0 = DeadLetter.from_dict(data)



                return dead_letter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeadLetter | None, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter"))


        archive = d.pop("archive")

        archive_retention = d.pop("archive_retention")

        queue_settings = cls(
            queue=queue,
            kind=kind,
            visibility_timeout=visibility_timeout,
            delay=delay,
            retention=retention,
            receive_wait=receive_wait,
            max_message_bytes=max_message_bytes,
            dead_letter=dead_letter,
            archive=archive,
            archive_retention=archive_retention,
        )

        return queue_settings

