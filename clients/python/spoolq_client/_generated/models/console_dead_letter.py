from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleDeadLetter")



@_attrs_define
class ConsoleDeadLetter:
    """ 
        Attributes:
            queue (str): store name of the dead-letter queue
            max_receives (int):
            messages (int): ready + delayed in the dead-letter queue
     """

    queue: str
    max_receives: int
    messages: int





    def to_dict(self) -> dict[str, Any]:
        queue = self.queue

        max_receives = self.max_receives

        messages = self.messages


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queue": queue,
            "max_receives": max_receives,
            "messages": messages,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        queue = d.pop("queue")

        max_receives = d.pop("max_receives")

        messages = d.pop("messages")

        console_dead_letter = cls(
            queue=queue,
            max_receives=max_receives,
            messages=messages,
        )

        return console_dead_letter

