from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.console_door_consumers import ConsoleDoorConsumers





T = TypeVar("T", bound="ConsoleConsumers")



@_attrs_define
class ConsoleConsumers:
    """ 
        Attributes:
            waiting (int): polls waiting on the queue now: HTTP long polls and blocked Disque GETJOBs
            last_poll_age (float | None): seconds since the latest poll through any door (empty polls too); null: none since
                the service started
            doors (list[ConsoleDoorConsumers]):
     """

    waiting: int
    last_poll_age: float | None
    doors: list[ConsoleDoorConsumers]





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_door_consumers import ConsoleDoorConsumers # noqa: PLC0415
        waiting = self.waiting

        last_poll_age: float | None
        last_poll_age = self.last_poll_age

        doors = []
        for doors_item_data in self.doors:
            doors_item = doors_item_data.to_dict()
            doors.append(doors_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "waiting": waiting,
            "last_poll_age": last_poll_age,
            "doors": doors,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_door_consumers import ConsoleDoorConsumers # noqa: PLC0415
        d = dict(src_dict)
        waiting = d.pop("waiting")

        def _parse_last_poll_age(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        last_poll_age = _parse_last_poll_age(d.pop("last_poll_age"))


        doors = []
        _doors = d.pop("doors")
        for doors_item_data in (_doors):
            doors_item = ConsoleDoorConsumers.from_dict(doors_item_data)



            doors.append(doors_item)


        console_consumers = cls(
            waiting=waiting,
            last_poll_age=last_poll_age,
            doors=doors,
        )

        return console_consumers

