from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_send_body_format import check_console_send_body_format
from ..models.console_send_body_format import ConsoleSendBodyFormat
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ConsoleSendBody")



@_attrs_define
class ConsoleSendBody:
    """ 
        Attributes:
            body (str): the message body (UTF-8)
            format_ (ConsoleSendBodyFormat | Unset): `json` (default): the body must be one JSON value, else 400 and nothing
                is sent (EmoDB queues store its compact form, as their door does); `text`: sent as typed Default: 'json'.
            group_id (None | str | Unset): FIFO queues
     """

    body: str
    format_: ConsoleSendBodyFormat | Unset = 'json'
    group_id: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        body = self.body

        format_: str | Unset = UNSET
        if not isinstance(self.format_, Unset):
            format_ = self.format_


        group_id: None | str | Unset
        if isinstance(self.group_id, Unset):
            group_id = UNSET
        else:
            group_id = self.group_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "body": body,
        })
        if format_ is not UNSET:
            field_dict["format"] = format_
        if group_id is not UNSET:
            field_dict["group_id"] = group_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        body = d.pop("body")

        _format_ = d.pop("format", UNSET)
        format_: ConsoleSendBodyFormat | Unset
        if isinstance(_format_,  Unset):
            format_ = UNSET
        else:
            format_ = check_console_send_body_format(_format_)




        def _parse_group_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        group_id = _parse_group_id(d.pop("group_id", UNSET))


        console_send_body = cls(
            body=body,
            format_=format_,
            group_id=group_id,
        )

        return console_send_body

