from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_resolved_queue_door import check_console_resolved_queue_door
from ..models.console_resolved_queue_door import ConsoleResolvedQueueDoor
from ..models.console_resolved_queue_kind import check_console_resolved_queue_kind
from ..models.console_resolved_queue_kind import ConsoleResolvedQueueKind
from typing import cast






T = TypeVar("T", bound="ConsoleResolvedQueue")



@_attrs_define
class ConsoleResolvedQueue:
    """ 
        Attributes:
            store_name (str):
            door (ConsoleResolvedQueueDoor):
            name (str): the name users of the door know
            kind (ConsoleResolvedQueueKind):
     """

    store_name: str
    door: ConsoleResolvedQueueDoor
    name: str
    kind: ConsoleResolvedQueueKind





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

        door = check_console_resolved_queue_door(d.pop("door"))




        name = d.pop("name")

        kind = check_console_resolved_queue_kind(d.pop("kind"))




        console_resolved_queue = cls(
            store_name=store_name,
            door=door,
            name=name,
            kind=kind,
        )

        return console_resolved_queue

