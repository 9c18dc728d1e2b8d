from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.console_move import ConsoleMove
  from ..models.console_queue_row import ConsoleQueueRow





T = TypeVar("T", bound="ConsoleQueueList")



@_attrs_define
class ConsoleQueueList:
    """ 
        Attributes:
            queues (list[ConsoleQueueRow]):
            moves (list[ConsoleMove]):
            time (float): server time of the counters
     """

    queues: list[ConsoleQueueRow]
    moves: list[ConsoleMove]
    time: float





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_move import ConsoleMove # noqa: PLC0415
        from ..models.console_queue_row import ConsoleQueueRow # noqa: PLC0415
        queues = []
        for queues_item_data in self.queues:
            queues_item = queues_item_data.to_dict()
            queues.append(queues_item)



        moves = []
        for moves_item_data in self.moves:
            moves_item = moves_item_data.to_dict()
            moves.append(moves_item)



        time = self.time


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "queues": queues,
            "moves": moves,
            "time": time,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_move import ConsoleMove # noqa: PLC0415
        from ..models.console_queue_row import ConsoleQueueRow # noqa: PLC0415
        d = dict(src_dict)
        queues = []
        _queues = d.pop("queues")
        for queues_item_data in (_queues):
            queues_item = ConsoleQueueRow.from_dict(queues_item_data)



            queues.append(queues_item)


        moves = []
        _moves = d.pop("moves")
        for moves_item_data in (_moves):
            moves_item = ConsoleMove.from_dict(moves_item_data)



            moves.append(moves_item)


        time = d.pop("time")

        console_queue_list = cls(
            queues=queues,
            moves=moves,
            time=time,
        )

        return console_queue_list

