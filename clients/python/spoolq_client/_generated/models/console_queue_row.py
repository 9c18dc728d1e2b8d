from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_queue_row_door import check_console_queue_row_door
from ..models.console_queue_row_door import ConsoleQueueRowDoor
from ..models.console_queue_row_kind import check_console_queue_row_kind
from ..models.console_queue_row_kind import ConsoleQueueRowKind
from typing import cast

if TYPE_CHECKING:
  from ..models.console_can import ConsoleCan
  from ..models.console_consumers import ConsoleConsumers
  from ..models.console_dead_letter import ConsoleDeadLetter
  from ..models.console_queue_row_dead_letter_type_0_type_0 import ConsoleQueueRowDeadLetterType0Type0
  from ..models.console_totals import ConsoleTotals





T = TypeVar("T", bound="ConsoleQueueRow")



@_attrs_define
class ConsoleQueueRow:
    """ 
        Attributes:
            store_name (str): the name in the store (unique)
            door (ConsoleQueueRowDoor):
            name (str): the name users of the door know
            kind (ConsoleQueueRowKind): the kind of queue, as `spoolq create --kind` names it
            ready (int):
            claimed (int):
            delayed (int):
            exact (bool): false when ready was estimated
            oldest_age (float): seconds; 0 when nothing is ready
            dead_letter (ConsoleDeadLetter | ConsoleQueueRowDeadLetterType0Type0 | None):
            dead_letter_sources (list[str]):
            totals (ConsoleTotals):
            consumers (ConsoleConsumers):
            can (ConsoleCan):
     """

    store_name: str
    door: ConsoleQueueRowDoor
    name: str
    kind: ConsoleQueueRowKind
    ready: int
    claimed: int
    delayed: int
    exact: bool
    oldest_age: float
    dead_letter: ConsoleDeadLetter | ConsoleQueueRowDeadLetterType0Type0 | None
    dead_letter_sources: list[str]
    totals: ConsoleTotals
    consumers: ConsoleConsumers
    can: ConsoleCan





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_can import ConsoleCan # noqa: PLC0415
        from ..models.console_consumers import ConsoleConsumers # noqa: PLC0415
        from ..models.console_dead_letter import ConsoleDeadLetter # noqa: PLC0415
        from ..models.console_queue_row_dead_letter_type_0_type_0 import ConsoleQueueRowDeadLetterType0Type0 # noqa: PLC0415
        from ..models.console_totals import ConsoleTotals # noqa: PLC0415
        store_name = self.store_name

        door: str = self.door

        name = self.name

        kind: str = self.kind

        ready = self.ready

        claimed = self.claimed

        delayed = self.delayed

        exact = self.exact

        oldest_age = self.oldest_age

        dead_letter: dict[str, Any] | None
        if isinstance(self.dead_letter, ConsoleQueueRowDeadLetterType0Type0):
            dead_letter = self.dead_letter.to_dict()
        elif isinstance(self.dead_letter, ConsoleDeadLetter):
            dead_letter = self.dead_letter.to_dict()
        else:
            dead_letter = self.dead_letter

        dead_letter_sources = self.dead_letter_sources



        totals = self.totals.to_dict()

        consumers = self.consumers.to_dict()

        can = self.can.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "store_name": store_name,
            "door": door,
            "name": name,
            "kind": kind,
            "ready": ready,
            "claimed": claimed,
            "delayed": delayed,
            "exact": exact,
            "oldest_age": oldest_age,
            "dead_letter": dead_letter,
            "dead_letter_sources": dead_letter_sources,
            "totals": totals,
            "consumers": consumers,
            "can": can,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_can import ConsoleCan # noqa: PLC0415
        from ..models.console_consumers import ConsoleConsumers # noqa: PLC0415
        from ..models.console_dead_letter import ConsoleDeadLetter # noqa: PLC0415
        from ..models.console_queue_row_dead_letter_type_0_type_0 import ConsoleQueueRowDeadLetterType0Type0 # noqa: PLC0415
        from ..models.console_totals import ConsoleTotals # noqa: PLC0415
        d = dict(src_dict)
        store_name = d.pop("store_name")

        door = check_console_queue_row_door(d.pop("door"))




        name = d.pop("name")

        kind = check_console_queue_row_kind(d.pop("kind"))




        ready = d.pop("ready")

        claimed = d.pop("claimed")

        delayed = d.pop("delayed")

        exact = d.pop("exact")

        oldest_age = d.pop("oldest_age")

        def _parse_dead_letter(data: object) -> ConsoleDeadLetter | ConsoleQueueRowDeadLetterType0Type0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dead_letter_type_0_type_0 = ConsoleQueueRowDeadLetterType0Type0.from_dict(data)



                return dead_letter_type_0_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dead_letter_type_1 = ConsoleDeadLetter.from_dict(data)



                return dead_letter_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConsoleDeadLetter | ConsoleQueueRowDeadLetterType0Type0 | None, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter"))


        dead_letter_sources = cast(list[str], d.pop("dead_letter_sources"))


        totals = ConsoleTotals.from_dict(d.pop("totals"))




        consumers = ConsoleConsumers.from_dict(d.pop("consumers"))




        can = ConsoleCan.from_dict(d.pop("can"))




        console_queue_row = cls(
            store_name=store_name,
            door=door,
            name=name,
            kind=kind,
            ready=ready,
            claimed=claimed,
            delayed=delayed,
            exact=exact,
            oldest_age=oldest_age,
            dead_letter=dead_letter,
            dead_letter_sources=dead_letter_sources,
            totals=totals,
            consumers=consumers,
            can=can,
        )

        return console_queue_row

