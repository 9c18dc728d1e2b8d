from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="Unavailable")



@_attrs_define
class Unavailable:
    """ 
        Attributes:
            message (str):
            retry_after_seconds (int):
            suppressed (list[Any]):
     """

    message: str
    retry_after_seconds: int
    suppressed: list[Any]





    def to_dict(self) -> dict[str, Any]:
        message = self.message

        retry_after_seconds = self.retry_after_seconds

        suppressed = self.suppressed




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "message": message,
            "retryAfterSeconds": retry_after_seconds,
            "suppressed": suppressed,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        message = d.pop("message")

        retry_after_seconds = d.pop("retryAfterSeconds")

        suppressed = cast(list[Any], d.pop("suppressed"))


        unavailable = cls(
            message=message,
            retry_after_seconds=retry_after_seconds,
            suppressed=suppressed,
        )

        return unavailable

