from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ConsoleMoveBody")



@_attrs_define
class ConsoleMoveBody:
    """ 
        Attributes:
            to (None | str | Unset): store name of an existing destination queue (redrive: defaults to the source)
            max_per_second (int | None | Unset):
     """

    to: None | str | Unset = UNSET
    max_per_second: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        max_per_second: int | None | Unset
        if isinstance(self.max_per_second, Unset):
            max_per_second = UNSET
        else:
            max_per_second = self.max_per_second


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if to is not UNSET:
            field_dict["to"] = to
        if max_per_second is not UNSET:
            field_dict["max_per_second"] = max_per_second

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))


        def _parse_max_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_per_second = _parse_max_per_second(d.pop("max_per_second", UNSET))


        console_move_body = cls(
            to=to,
            max_per_second=max_per_second,
        )

        return console_move_body

