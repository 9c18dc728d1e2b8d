from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleVisibilityBody")



@_attrs_define
class ConsoleVisibilityBody:
    """ 
        Attributes:
            receipts (list[str]): receipts from a receive (or message ids)
            visibility_timeout (int): seconds from now the claims last (0: visible again now)
     """

    receipts: list[str]
    visibility_timeout: int





    def to_dict(self) -> dict[str, Any]:
        receipts = self.receipts



        visibility_timeout = self.visibility_timeout


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "receipts": receipts,
            "visibility_timeout": visibility_timeout,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        receipts = cast(list[str], d.pop("receipts"))


        visibility_timeout = d.pop("visibility_timeout")

        console_visibility_body = cls(
            receipts=receipts,
            visibility_timeout=visibility_timeout,
        )

        return console_visibility_body

