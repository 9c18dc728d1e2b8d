from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.console_resolved_queue import ConsoleResolvedQueue





T = TypeVar("T", bound="ConsoleResolved")



@_attrs_define
class ConsoleResolved:
    """ 
        Attributes:
            queues (list[ConsoleResolvedQueue]): the queues the name stands for that the key may see: none (no such queue),
                one, or several (ambiguous: name one by its store name)
     """

    queues: list[ConsoleResolvedQueue]





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_resolved_queue import ConsoleResolvedQueue # noqa: PLC0415
        queues = []
        for queues_item_data in self.queues:
            queues_item = queues_item_data.to_dict()
            queues.append(queues_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queues": queues,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_resolved_queue import ConsoleResolvedQueue # noqa: PLC0415
        d = dict(src_dict)
        queues = []
        _queues = d.pop("queues")
        for queues_item_data in (_queues):
            queues_item = ConsoleResolvedQueue.from_dict(queues_item_data)



            queues.append(queues_item)


        console_resolved = cls(
            queues=queues,
        )

        return console_resolved

