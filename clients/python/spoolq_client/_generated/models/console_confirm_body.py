from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleConfirmBody")



@_attrs_define
class ConsoleConfirmBody:
    """ 
        Attributes:
            confirm (str): the queue's name, typed to confirm
     """

    confirm: str





    def to_dict(self) -> dict[str, Any]:
        confirm = self.confirm


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "confirm": confirm,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        confirm = d.pop("confirm")

        console_confirm_body = cls(
            confirm=confirm,
        )

        return console_confirm_body

