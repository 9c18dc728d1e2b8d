from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_created_door import check_console_created_door
from ..models.console_created_door import ConsoleCreatedDoor
from ..models.console_created_kind import check_console_created_kind
from ..models.console_created_kind import ConsoleCreatedKind
from typing import cast






T = TypeVar("T", bound="ConsoleCreated")



@_attrs_define
class ConsoleCreated:
    """ 
        Attributes:
            store_name (str):
            door (ConsoleCreatedDoor):
            name (str):
            kind (ConsoleCreatedKind): the kind of queue, as `spoolq create --kind` names it
     """

    store_name: str
    door: ConsoleCreatedDoor
    name: str
    kind: ConsoleCreatedKind





    def to_dict(self) -> dict[str, Any]:
        store_name = self.store_name

        door: str = self.door

        name = self.name

        kind: str = self.kind


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "store_name": store_name,
            "door": door,
            "name": name,
            "kind": kind,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        store_name = d.pop("store_name")

        door = check_console_created_door(d.pop("door"))




        name = d.pop("name")

        kind = check_console_created_kind(d.pop("kind"))




        console_created = cls(
            store_name=store_name,
            door=door,
            name=name,
            kind=kind,
        )

        return console_created

