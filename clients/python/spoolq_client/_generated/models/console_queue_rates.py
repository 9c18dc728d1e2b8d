from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsoleQueueRates")



@_attrs_define
class ConsoleQueueRates:
    """ 
        Attributes:
            send (list[float | None]): sent per second
            poll (list[float | None]): delivered per second
            ack (list[float | None]): acknowledged per second
     """

    send: list[float | None]
    poll: list[float | None]
    ack: list[float | None]





    def to_dict(self) -> dict[str, Any]:
        send = []
        for send_item_data in self.send:
            send_item: float | None
            send_item = send_item_data
            send.append(send_item)



        poll = []
        for poll_item_data in self.poll:
            poll_item: float | None
            poll_item = poll_item_data
            poll.append(poll_item)



        ack = []
        for ack_item_data in self.ack:
            ack_item: float | None
            ack_item = ack_item_data
            ack.append(ack_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "send": send,
            "poll": poll,
            "ack": ack,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        send = []
        _send = d.pop("send")
        for send_item_data in (_send):
            def _parse_send_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            send_item = _parse_send_item(send_item_data)

            send.append(send_item)


        poll = []
        _poll = d.pop("poll")
        for poll_item_data in (_poll):
            def _parse_poll_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            poll_item = _parse_poll_item(poll_item_data)

            poll.append(poll_item)


        ack = []
        _ack = d.pop("ack")
        for ack_item_data in (_ack):
            def _parse_ack_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            ack_item = _parse_ack_item(ack_item_data)

            ack.append(ack_item)


        console_queue_rates = cls(
            send=send,
            poll=poll,
            ack=ack,
        )

        return console_queue_rates

