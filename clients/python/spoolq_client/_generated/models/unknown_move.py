from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="UnknownMove")



@_attrs_define
class UnknownMove:
    """ 
        Attributes:
            id (str):
            message (str):
            suppressed (list[Any]):
     """

    id: str
    message: str
    suppressed: list[Any]





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        message = self.message

        suppressed = self.suppressed




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "message": message,
            "suppressed": suppressed,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        message = d.pop("message")

        suppressed = cast(list[Any], d.pop("suppressed"))


        unknown_move = cls(
            id=id,
            message=message,
            suppressed=suppressed,
        )

        return unknown_move

