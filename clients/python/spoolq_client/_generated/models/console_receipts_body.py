from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleReceiptsBody")



@_attrs_define
class ConsoleReceiptsBody:
    """ 
        Attributes:
            receipts (list[str]): receipts from a receive (or message ids)
     """

    receipts: list[str]





    def to_dict(self) -> dict[str, Any]:
        receipts = self.receipts




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "receipts": receipts,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        receipts = cast(list[str], d.pop("receipts"))


        console_receipts_body = cls(
            receipts=receipts,
        )

        return console_receipts_body

