from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="Message")



@_attrs_define
class Message:
    """ 
        Attributes:
            id (str): 40 lowercase hex characters
            payload (Any): the JSON value sent
     """

    id: str
    payload: Any





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        payload = self.payload


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "payload": payload,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        payload = d.pop("payload")

        message = cls(
            id=id,
            payload=payload,
        )

        return message

