from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ValidationErrors")



@_attrs_define
class ValidationErrors:
    """ 
        Attributes:
            errors (list[str]): what is wrong, one line each
     """

    errors: list[str]





    def to_dict(self) -> dict[str, Any]:
        errors = self.errors




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "errors": errors,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        errors = cast(list[str], d.pop("errors"))


        validation_errors = cls(
            errors=errors,
        )

        return validation_errors

