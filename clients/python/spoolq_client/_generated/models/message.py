from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="Message")



@_attrs_define
class Message:
    """ 
        Attributes:
            id (str): 40 lowercase hex characters
            payload (Any): the JSON value sent
            sent_at (float | Unset): extension (meta=true): when the message was sent, epoch seconds
            receive_count (int | Unset): extension (meta=true): deliveries so far, this one included on poll
     """

    id: str
    payload: Any
    sent_at: float | Unset = UNSET
    receive_count: int | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        payload = self.payload

        sent_at = self.sent_at

        receive_count = self.receive_count


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "payload": payload,
        })
        if sent_at is not UNSET:
            field_dict["sentAt"] = sent_at
        if receive_count is not UNSET:
            field_dict["receiveCount"] = receive_count

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        payload = d.pop("payload")

        sent_at = d.pop("sentAt", UNSET)

        receive_count = d.pop("receiveCount", UNSET)

        message = cls(
            id=id,
            payload=payload,
            sent_at=sent_at,
            receive_count=receive_count,
        )

        return message

