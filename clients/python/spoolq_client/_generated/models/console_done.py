from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleDone")



@_attrs_define
class ConsoleDone:
    """ 
        Attributes:
            done (list[bool]): per receipt: false when the claim was no longer this one's (expired, or received again)
     """

    done: list[bool]





    def to_dict(self) -> dict[str, Any]:
        done = self.done




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "done": done,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        done = cast(list[bool], d.pop("done"))


        console_done = cls(
            done=done,
        )

        return console_done

