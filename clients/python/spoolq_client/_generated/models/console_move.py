from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_move_state import check_console_move_state
from ..models.console_move_state import ConsoleMoveState
from typing import cast






T = TypeVar("T", bound="ConsoleMove")



@_attrs_define
class ConsoleMove:
    """ 
        Attributes:
            ref (str):
            source (str):
            destination (str):
            state (ConsoleMoveState):
            moved (int):
            remaining (int): messages still in the source
            started_at (float):
            finished_at (float | None):
            error (None | str):
            max_per_second (int | None):
     """

    ref: str
    source: str
    destination: str
    state: ConsoleMoveState
    moved: int
    remaining: int
    started_at: float
    finished_at: float | None
    error: None | str
    max_per_second: int | None





    def to_dict(self) -> dict[str, Any]:
        ref = self.ref

        source = self.source

        destination = self.destination

        state: str = self.state

        moved = self.moved

        remaining = self.remaining

        started_at = self.started_at

        finished_at: float | None
        finished_at = self.finished_at

        error: None | str
        error = self.error

        max_per_second: int | None
        max_per_second = self.max_per_second


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ref": ref,
            "source": source,
            "destination": destination,
            "state": state,
            "moved": moved,
            "remaining": remaining,
            "started_at": started_at,
            "finished_at": finished_at,
            "error": error,
            "max_per_second": max_per_second,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ref = d.pop("ref")

        source = d.pop("source")

        destination = d.pop("destination")

        state = check_console_move_state(d.pop("state"))




        moved = d.pop("moved")

        remaining = d.pop("remaining")

        started_at = d.pop("started_at")

        def _parse_finished_at(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))


        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))


        def _parse_max_per_second(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_per_second = _parse_max_per_second(d.pop("max_per_second"))


        console_move = cls(
            ref=ref,
            source=source,
            destination=destination,
            state=state,
            moved=moved,
            remaining=remaining,
            started_at=started_at,
            finished_at=finished_at,
            error=error,
            max_per_second=max_per_second,
        )

        return console_move

