from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.dead_letter import DeadLetter





T = TypeVar("T", bound="QueueSettingsChange")



@_attrs_define
class QueueSettingsChange:
    """ 
        Attributes:
            visibility_timeout (int | Unset): seconds a delivery stays claimed when the poll names no time
            delay (int | Unset): seconds before a new message becomes visible (SQS queues: at most 900)
            retention (int | Unset): unconsumed messages older than this many seconds are dropped (SQS queues: 60-1209600)
            receive_wait (int | Unset): long-poll seconds of a poll that names no wait
            max_message_bytes (int | Unset): largest message body in bytes (SQS queues: 1024-1048576)
            dead_letter (DeadLetter | None | Unset): null: no dead-letter queue
            archive (bool | Unset): keep acknowledged messages for audit (spoolq pipeline audit)
            archive_retention (int | Unset): seconds archived messages are kept
     """

    visibility_timeout: int | Unset = UNSET
    delay: int | Unset = UNSET
    retention: int | Unset = UNSET
    receive_wait: int | Unset = UNSET
    max_message_bytes: int | Unset = UNSET
    dead_letter: DeadLetter | None | Unset = UNSET
    archive: bool | Unset = UNSET
    archive_retention: int | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.dead_letter import DeadLetter # noqa: PLC0415
        visibility_timeout = self.visibility_timeout

        delay = self.delay

        retention = self.retention

        receive_wait = self.receive_wait

        max_message_bytes = self.max_message_bytes

        dead_letter: dict[str, Any] | None | Unset
        if isinstance(self.dead_letter, Unset):
            dead_letter = UNSET
        elif isinstance(self.dead_letter, DeadLetter):
            dead_letter = self.dead_letter.to_dict()
        else:
            dead_letter = self.dead_letter

        archive = self.archive

        archive_retention = self.archive_retention


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if visibility_timeout is not UNSET:
            field_dict["visibility_timeout"] = visibility_timeout
        if delay is not UNSET:
            field_dict["delay"] = delay
        if retention is not UNSET:
            field_dict["retention"] = retention
        if receive_wait is not UNSET:
            field_dict["receive_wait"] = receive_wait
        if max_message_bytes is not UNSET:
            field_dict["max_message_bytes"] = max_message_bytes
        if dead_letter is not UNSET:
            field_dict["dead_letter"] = dead_letter
        if archive is not UNSET:
            field_dict["archive"] = archive
        if archive_retention is not UNSET:
            field_dict["archive_retention"] = archive_retention

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dead_letter import DeadLetter # noqa: PLC0415
        d = dict(src_dict)
        visibility_timeout = d.pop("visibility_timeout", UNSET)

        delay = d.pop("delay", UNSET)

        retention = d.pop("retention", UNSET)

        receive_wait = d.pop("receive_wait", UNSET)

        max_message_bytes = d.pop("max_message_bytes", UNSET)

        def _parse_dead_letter(data: object) -> DeadLetter | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dead_letter_type_0 = DeadLetter.from_dict(data)



                return dead_letter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeadLetter | None | Unset, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter", UNSET))


        archive = d.pop("archive", UNSET)

        archive_retention = d.pop("archive_retention", UNSET)

        queue_settings_change = cls(
            visibility_timeout=visibility_timeout,
            delay=delay,
            retention=retention,
            receive_wait=receive_wait,
            max_message_bytes=max_message_bytes,
            dead_letter=dead_letter,
            archive=archive,
            archive_retention=archive_retention,
        )

        return queue_settings_change

