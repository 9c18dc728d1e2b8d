from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_sent_format import check_console_sent_format
from ..models.console_sent_format import ConsoleSentFormat
from typing import cast






T = TypeVar("T", bound="ConsoleSent")



@_attrs_define
class ConsoleSent:
    """ 
        Attributes:
            id (str):
            format_ (ConsoleSentFormat):
     """

    id: str
    format_: ConsoleSentFormat





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        format_: str = self.format_


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "format": format_,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        format_ = check_console_sent_format(d.pop("format"))




        console_sent = cls(
            id=id,
            format_=format_,
        )

        return console_sent

