from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleDamaged")



@_attrs_define
class ConsoleDamaged:
    """ 
        Attributes:
            path (str): a file or directory the file system answers EIO for
            what (str): what the service was doing with it
            first_seen (float):
            last_seen (float):
            fix (str): what to run (on GlusterFS: the heal commands)
     """

    path: str
    what: str
    first_seen: float
    last_seen: float
    fix: str





    def to_dict(self) -> dict[str, Any]:
        path = self.path

        what = self.what

        first_seen = self.first_seen

        last_seen = self.last_seen

        fix = self.fix


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "path": path,
            "what": what,
            "first_seen": first_seen,
            "last_seen": last_seen,
            "fix": fix,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        path = d.pop("path")

        what = d.pop("what")

        first_seen = d.pop("first_seen")

        last_seen = d.pop("last_seen")

        fix = d.pop("fix")

        console_damaged = cls(
            path=path,
            what=what,
            first_seen=first_seen,
            last_seen=last_seen,
            fix=fix,
        )

        return console_damaged

