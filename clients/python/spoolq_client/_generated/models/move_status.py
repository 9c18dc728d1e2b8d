from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.move_status_status import check_move_status_status
from ..models.move_status_status import MoveStatusStatus
from typing import cast






T = TypeVar("T", bound="MoveStatus")



@_attrs_define
class MoveStatus:
    """ 
        Attributes:
            from_ (str):
            to (str):
            status (MoveStatusStatus):
     """

    from_: str
    to: str
    status: MoveStatusStatus





    def to_dict(self) -> dict[str, Any]:
        from_ = self.from_

        to = self.to

        status: str = self.status


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "from": from_,
            "to": to,
            "status": status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_ = d.pop("from")

        to = d.pop("to")

        status = check_move_status_status(d.pop("status"))




        move_status = cls(
            from_=from_,
            to=to,
            status=status,
        )

        return move_status

