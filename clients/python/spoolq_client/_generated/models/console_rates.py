from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.console_rates_queues import ConsoleRatesQueues





T = TypeVar("T", bound="ConsoleRates")



@_attrs_define
class ConsoleRates:
    """ 
        Attributes:
            interval (int): seconds per point
            end (int): Unix time the last point ends at
            slots (int): points per series, oldest first
            covered (list[bool]): per point: whether the server has a sample for it (false: before it started)
            queues (ConsoleRatesQueues): queues that moved in the window; null points: no sample
     """

    interval: int
    end: int
    slots: int
    covered: list[bool]
    queues: ConsoleRatesQueues





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_rates_queues import ConsoleRatesQueues # noqa: PLC0415
        interval = self.interval

        end = self.end

        slots = self.slots

        covered = self.covered



        queues = self.queues.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "interval": interval,
            "end": end,
            "slots": slots,
            "covered": covered,
            "queues": queues,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_rates_queues import ConsoleRatesQueues # noqa: PLC0415
        d = dict(src_dict)
        interval = d.pop("interval")

        end = d.pop("end")

        slots = d.pop("slots")

        covered = cast(list[bool], d.pop("covered"))


        queues = ConsoleRatesQueues.from_dict(d.pop("queues"))




        console_rates = cls(
            interval=interval,
            end=end,
            slots=slots,
            covered=covered,
            queues=queues,
        )

        return console_rates

