from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ConsoleReceiveBody")



@_attrs_define
class ConsoleReceiveBody:
    """ 
        Attributes:
            limit (int | Unset): most messages to claim (1-10) Default: 1.
            visibility_timeout (int | None | Unset): seconds the claim lasts (default: the queue's)
     """

    limit: int | Unset = 1
    visibility_timeout: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        visibility_timeout: int | None | Unset
        if isinstance(self.visibility_timeout, Unset):
            visibility_timeout = UNSET
        else:
            visibility_timeout = self.visibility_timeout


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if limit is not UNSET:
            field_dict["limit"] = limit
        if visibility_timeout is not UNSET:
            field_dict["visibility_timeout"] = visibility_timeout

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        limit = d.pop("limit", UNSET)

        def _parse_visibility_timeout(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        visibility_timeout = _parse_visibility_timeout(d.pop("visibility_timeout", UNSET))


        console_receive_body = cls(
            limit=limit,
            visibility_timeout=visibility_timeout,
        )

        return console_receive_body

