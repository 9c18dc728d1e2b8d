from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_received_message_encoding import check_console_received_message_encoding
from ..models.console_received_message_encoding import ConsoleReceivedMessageEncoding
from typing import cast

if TYPE_CHECKING:
  from ..models.console_received_message_attributes import ConsoleReceivedMessageAttributes





T = TypeVar("T", bound="ConsoleReceivedMessage")



@_attrs_define
class ConsoleReceivedMessage:
    """ 
        Attributes:
            id (str):
            sent_at (float):
            receive_count (int):
            claimed_until (float | None):
            group_id (None | str):
            size (int):
            body (str): UTF-8 text, or base64 when binary
            encoding (ConsoleReceivedMessageEncoding):
            attributes (ConsoleReceivedMessageAttributes):
            receipt (str): names this claim: acknowledge or release it
     """

    id: str
    sent_at: float
    receive_count: int
    claimed_until: float | None
    group_id: None | str
    size: int
    body: str
    encoding: ConsoleReceivedMessageEncoding
    attributes: ConsoleReceivedMessageAttributes
    receipt: str





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_received_message_attributes import ConsoleReceivedMessageAttributes # noqa: PLC0415
        id = self.id

        sent_at = self.sent_at

        receive_count = self.receive_count

        claimed_until: float | None
        claimed_until = self.claimed_until

        group_id: None | str
        group_id = self.group_id

        size = self.size

        body = self.body

        encoding: str = self.encoding

        attributes = self.attributes.to_dict()

        receipt = self.receipt


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "sent_at": sent_at,
            "receive_count": receive_count,
            "claimed_until": claimed_until,
            "group_id": group_id,
            "size": size,
            "body": body,
            "encoding": encoding,
            "attributes": attributes,
            "receipt": receipt,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_received_message_attributes import ConsoleReceivedMessageAttributes # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        sent_at = d.pop("sent_at")

        receive_count = d.pop("receive_count")

        def _parse_claimed_until(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        claimed_until = _parse_claimed_until(d.pop("claimed_until"))


        def _parse_group_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        group_id = _parse_group_id(d.pop("group_id"))


        size = d.pop("size")

        body = d.pop("body")

        encoding = check_console_received_message_encoding(d.pop("encoding"))




        attributes = ConsoleReceivedMessageAttributes.from_dict(d.pop("attributes"))




        receipt = d.pop("receipt")

        console_received_message = cls(
            id=id,
            sent_at=sent_at,
            receive_count=receive_count,
            claimed_until=claimed_until,
            group_id=group_id,
            size=size,
            body=body,
            encoding=encoding,
            attributes=attributes,
            receipt=receipt,
        )

        return console_received_message

