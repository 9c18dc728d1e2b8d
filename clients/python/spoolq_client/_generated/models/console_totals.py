from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleTotals")



@_attrs_define
class ConsoleTotals:
    """ 
        Attributes:
            send (float):
            poll (float):
            ack (float):
     """

    send: float
    poll: float
    ack: float





    def to_dict(self) -> dict[str, Any]:
        send = self.send

        poll = self.poll

        ack = self.ack


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
        send = d.pop("send")

        poll = d.pop("poll")

        ack = d.pop("ack")

        console_totals = cls(
            send=send,
            poll=poll,
            ack=ack,
        )

        return console_totals

