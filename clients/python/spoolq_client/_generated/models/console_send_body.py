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

if TYPE_CHECKING:
  from ..models.console_send_body_attributes_type_0 import ConsoleSendBodyAttributesType0





T = TypeVar("T", bound="ConsoleSendBody")



@_attrs_define
class ConsoleSendBody:
    """ 
        Attributes:
            body (str): the message body (UTF-8)
            format_ (ConsoleSendBodyFormat | Unset): `json` (default): the body must be one JSON value, else 400 and nothing
                is sent (EmoDB queues store its compact form, as their door does); `text`: sent as typed Default: 'json'.
            group_id (None | str | Unset): FIFO queues: the message group
            dedup_id (None | str | Unset): FIFO queues: the deduplication id (default: the body's SHA-256 on a queue with
                content-based deduplication, else a new random one)
            attributes (ConsoleSendBodyAttributesType0 | None | Unset): message attributes (strings), as SQS's String
                attributes
            delay (int | None | Unset): seconds before the message becomes visible (default: the queue's delay)
     """

    body: str
    format_: ConsoleSendBodyFormat | Unset = 'json'
    group_id: None | str | Unset = UNSET
    dedup_id: None | str | Unset = UNSET
    attributes: ConsoleSendBodyAttributesType0 | None | Unset = UNSET
    delay: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_send_body_attributes_type_0 import ConsoleSendBodyAttributesType0 # noqa: PLC0415
        body = self.body

        format_: str | Unset = UNSET
        if not isinstance(self.format_, Unset):
            format_ = self.format_


        group_id: None | str | Unset
        if isinstance(self.group_id, Unset):
            group_id = UNSET
        else:
            group_id = self.group_id

        dedup_id: None | str | Unset
        if isinstance(self.dedup_id, Unset):
            dedup_id = UNSET
        else:
            dedup_id = self.dedup_id

        attributes: dict[str, Any] | None | Unset
        if isinstance(self.attributes, Unset):
            attributes = UNSET
        elif isinstance(self.attributes, ConsoleSendBodyAttributesType0):
            attributes = self.attributes.to_dict()
        else:
            attributes = self.attributes

        delay: int | None | Unset
        if isinstance(self.delay, Unset):
            delay = UNSET
        else:
            delay = self.delay


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "body": body,
        })
        if format_ is not UNSET:
            field_dict["format"] = format_
        if group_id is not UNSET:
            field_dict["group_id"] = group_id
        if dedup_id is not UNSET:
            field_dict["dedup_id"] = dedup_id
        if attributes is not UNSET:
            field_dict["attributes"] = attributes
        if delay is not UNSET:
            field_dict["delay"] = delay

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_send_body_attributes_type_0 import ConsoleSendBodyAttributesType0 # noqa: PLC0415
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


        def _parse_dedup_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dedup_id = _parse_dedup_id(d.pop("dedup_id", UNSET))


        def _parse_attributes(data: object) -> ConsoleSendBodyAttributesType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                attributes_type_0 = ConsoleSendBodyAttributesType0.from_dict(data)



                return attributes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConsoleSendBodyAttributesType0 | None | Unset, data)

        attributes = _parse_attributes(d.pop("attributes", UNSET))


        def _parse_delay(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay = _parse_delay(d.pop("delay", UNSET))


        console_send_body = cls(
            body=body,
            format_=format_,
            group_id=group_id,
            dedup_id=dedup_id,
            attributes=attributes,
            delay=delay,
        )

        return console_send_body

