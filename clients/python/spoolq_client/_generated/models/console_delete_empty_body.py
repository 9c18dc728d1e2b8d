from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleDeleteEmptyBody")



@_attrs_define
class ConsoleDeleteEmptyBody:
    """ 
        Attributes:
            queues (list[str]): store names; each is deleted only if it holds no message
     """

    queues: list[str]





    def to_dict(self) -> dict[str, Any]:
        queues = self.queues




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queues": queues,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        queues = cast(list[str], d.pop("queues"))


        console_delete_empty_body = cls(
            queues=queues,
        )

        return console_delete_empty_body

