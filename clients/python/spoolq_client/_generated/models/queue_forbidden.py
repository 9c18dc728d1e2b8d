from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="QueueForbidden")



@_attrs_define
class QueueForbidden:
    """ 
        Attributes:
            queue (str): first queue the key may not post to
     """

    queue: str





    def to_dict(self) -> dict[str, Any]:
        queue = self.queue


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queue": queue,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        queue = d.pop("queue")

        queue_forbidden = cls(
            queue=queue,
        )

        return queue_forbidden

