from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleSession")



@_attrs_define
class ConsoleSession:
    """ 
        Attributes:
            open_ (bool): true when the service has no API keys
            principal (str): the key's name (open, anonymous, ...)
            version (str):
            node (str):
     """

    open_: bool
    principal: str
    version: str
    node: str





    def to_dict(self) -> dict[str, Any]:
        open_ = self.open_

        principal = self.principal

        version = self.version

        node = self.node


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "open": open_,
            "principal": principal,
            "version": version,
            "node": node,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        open_ = d.pop("open")

        principal = d.pop("principal")

        version = d.pop("version")

        node = d.pop("node")

        console_session = cls(
            open_=open_,
            principal=principal,
            version=version,
            node=node,
        )

        return console_session

