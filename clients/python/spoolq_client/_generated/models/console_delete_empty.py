from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleDeleteEmpty")



@_attrs_define
class ConsoleDeleteEmpty:
    """ 
        Attributes:
            deleted (list[str]):
            not_empty (list[str]): kept: they held messages (perhaps sent a moment ago)
            missing (list[str]):
     """

    deleted: list[str]
    not_empty: list[str]
    missing: list[str]





    def to_dict(self) -> dict[str, Any]:
        deleted = self.deleted



        not_empty = self.not_empty



        missing = self.missing




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "deleted": deleted,
            "not_empty": not_empty,
            "missing": missing,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        deleted = cast(list[str], d.pop("deleted"))


        not_empty = cast(list[str], d.pop("not_empty"))


        missing = cast(list[str], d.pop("missing"))


        console_delete_empty = cls(
            deleted=deleted,
            not_empty=not_empty,
            missing=missing,
        )

        return console_delete_empty

