from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="DeadLetter")



@_attrs_define
class DeadLetter:
    """ 
        Attributes:
            queue (str): the dead-letter queue's store name
            max_receives (int): deliveries before the next one moves the message to the dead-letter queue (SQS queues:
                1-1000)
     """

    queue: str
    max_receives: int





    def to_dict(self) -> dict[str, Any]:
        queue = self.queue

        max_receives = self.max_receives


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queue": queue,
            "max_receives": max_receives,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        queue = d.pop("queue")

        max_receives = d.pop("max_receives")

        dead_letter = cls(
            queue=queue,
            max_receives=max_receives,
        )

        return dead_letter

