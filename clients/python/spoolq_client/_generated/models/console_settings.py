from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleSettings")



@_attrs_define
class ConsoleSettings:
    """ 
        Attributes:
            visibility_timeout (float):
            delay (float):
            retention (float):
            max_message_bytes (int):
            receive_wait (float):
            fifo (bool):
            content_based_dedup (bool):
            archive (bool):
            archive_retention (float):
     """

    visibility_timeout: float
    delay: float
    retention: float
    max_message_bytes: int
    receive_wait: float
    fifo: bool
    content_based_dedup: bool
    archive: bool
    archive_retention: float





    def to_dict(self) -> dict[str, Any]:
        visibility_timeout = self.visibility_timeout

        delay = self.delay

        retention = self.retention

        max_message_bytes = self.max_message_bytes

        receive_wait = self.receive_wait

        fifo = self.fifo

        content_based_dedup = self.content_based_dedup

        archive = self.archive

        archive_retention = self.archive_retention


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "visibility_timeout": visibility_timeout,
            "delay": delay,
            "retention": retention,
            "max_message_bytes": max_message_bytes,
            "receive_wait": receive_wait,
            "fifo": fifo,
            "content_based_dedup": content_based_dedup,
            "archive": archive,
            "archive_retention": archive_retention,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        visibility_timeout = d.pop("visibility_timeout")

        delay = d.pop("delay")

        retention = d.pop("retention")

        max_message_bytes = d.pop("max_message_bytes")

        receive_wait = d.pop("receive_wait")

        fifo = d.pop("fifo")

        content_based_dedup = d.pop("content_based_dedup")

        archive = d.pop("archive")

        archive_retention = d.pop("archive_retention")

        console_settings = cls(
            visibility_timeout=visibility_timeout,
            delay=delay,
            retention=retention,
            max_message_bytes=max_message_bytes,
            receive_wait=receive_wait,
            fifo=fifo,
            content_based_dedup=content_based_dedup,
            archive=archive,
            archive_retention=archive_retention,
        )

        return console_settings

