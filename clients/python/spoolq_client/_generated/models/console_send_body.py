from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ConsoleSendBody")



@_attrs_define
class ConsoleSendBody:
    """ 
        Attributes:
            body (str): the message body (UTF-8)
            group_id (None | str | Unset): FIFO queues
     """

    body: str
    group_id: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        body = self.body

        group_id: None | str | Unset
        if isinstance(self.group_id, Unset):
            group_id = UNSET
        else:
            group_id = self.group_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "body": body,
        })
        if group_id is not UNSET:
            field_dict["group_id"] = group_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        body = d.pop("body")

        def _parse_group_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        group_id = _parse_group_id(d.pop("group_id", UNSET))


        console_send_body = cls(
            body=body,
            group_id=group_id,
        )

        return console_send_body

