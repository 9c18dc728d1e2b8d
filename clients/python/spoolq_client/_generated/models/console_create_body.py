from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_create_body_door import check_console_create_body_door
from ..models.console_create_body_door import ConsoleCreateBodyDoor
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ConsoleCreateBody")



@_attrs_define
class ConsoleCreateBody:
    """ 
        Attributes:
            door (ConsoleCreateBodyDoor): whose queue: queue (EmoDB), dedupq (EmoDB dedup), sqs, mq, disque
            name (str): the name users of that door know
            fifo (bool | Unset): SQS: a FIFO queue (the name ends in .fifo) Default: False.
            content_based_dedup (bool | Unset): SQS FIFO queues Default: False.
            region (None | str | Unset): SQS: the region (default: the service's SQS region)
     """

    door: ConsoleCreateBodyDoor
    name: str
    fifo: bool | Unset = False
    content_based_dedup: bool | Unset = False
    region: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        door: str = self.door

        name = self.name

        fifo = self.fifo

        content_based_dedup = self.content_based_dedup

        region: None | str | Unset
        if isinstance(self.region, Unset):
            region = UNSET
        else:
            region = self.region


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "door": door,
            "name": name,
        })
        if fifo is not UNSET:
            field_dict["fifo"] = fifo
        if content_based_dedup is not UNSET:
            field_dict["content_based_dedup"] = content_based_dedup
        if region is not UNSET:
            field_dict["region"] = region

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        door = check_console_create_body_door(d.pop("door"))




        name = d.pop("name")

        fifo = d.pop("fifo", UNSET)

        content_based_dedup = d.pop("content_based_dedup", UNSET)

        def _parse_region(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        region = _parse_region(d.pop("region", UNSET))


        console_create_body = cls(
            door=door,
            name=name,
            fifo=fifo,
            content_based_dedup=content_based_dedup,
            region=region,
        )

        return console_create_body

