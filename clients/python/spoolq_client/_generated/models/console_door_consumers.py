from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleDoorConsumers")



@_attrs_define
class ConsoleDoorConsumers:
    """ 
        Attributes:
            door (str): http door or disque
            waiting (int): long polls (blocked GETJOBs) waiting now
            last_poll_at (float | None): Unix time
            last_poll_age (float | None): seconds ago
     """

    door: str
    waiting: int
    last_poll_at: float | None
    last_poll_age: float | None





    def to_dict(self) -> dict[str, Any]:
        door = self.door

        waiting = self.waiting

        last_poll_at: float | None
        last_poll_at = self.last_poll_at

        last_poll_age: float | None
        last_poll_age = self.last_poll_age


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "door": door,
            "waiting": waiting,
            "last_poll_at": last_poll_at,
            "last_poll_age": last_poll_age,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        door = d.pop("door")

        waiting = d.pop("waiting")

        def _parse_last_poll_at(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        last_poll_at = _parse_last_poll_at(d.pop("last_poll_at"))


        def _parse_last_poll_age(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        last_poll_age = _parse_last_poll_age(d.pop("last_poll_age"))


        console_door_consumers = cls(
            door=door,
            waiting=waiting,
            last_poll_at=last_poll_at,
            last_poll_age=last_poll_age,
        )

        return console_door_consumers

