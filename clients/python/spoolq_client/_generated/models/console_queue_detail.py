from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_queue_detail_door import check_console_queue_detail_door
from ..models.console_queue_detail_door import ConsoleQueueDetailDoor
from ..models.console_queue_detail_kind import check_console_queue_detail_kind
from ..models.console_queue_detail_kind import ConsoleQueueDetailKind
from typing import cast

if TYPE_CHECKING:
  from ..models.console_can import ConsoleCan
  from ..models.console_consumers import ConsoleConsumers
  from ..models.console_dead_letter import ConsoleDeadLetter
  from ..models.console_move import ConsoleMove
  from ..models.console_queue_detail_dead_letter_type_0_type_0 import ConsoleQueueDetailDeadLetterType0Type0
  from ..models.console_queue_detail_tags import ConsoleQueueDetailTags
  from ..models.console_settings import ConsoleSettings
  from ..models.console_totals import ConsoleTotals





T = TypeVar("T", bound="ConsoleQueueDetail")



@_attrs_define
class ConsoleQueueDetail:
    """ 
        Attributes:
            store_name (str): the name in the store (unique)
            door (ConsoleQueueDetailDoor):
            name (str): the name users of the door know
            kind (ConsoleQueueDetailKind): the kind of queue, as `spoolq create --kind` names it
            ready (int):
            claimed (int):
            delayed (int):
            exact (bool): false when ready was estimated
            oldest_age (float): seconds; 0 when nothing is ready
            dead_letter (ConsoleDeadLetter | ConsoleQueueDetailDeadLetterType0Type0 | None):
            dead_letter_sources (list[str]):
            totals (ConsoleTotals):
            consumers (ConsoleConsumers):
            can (ConsoleCan):
            settings (ConsoleSettings):
            tags (ConsoleQueueDetailTags):
            created_at (float):
            moves (list[ConsoleMove]):
     """

    store_name: str
    door: ConsoleQueueDetailDoor
    name: str
    kind: ConsoleQueueDetailKind
    ready: int
    claimed: int
    delayed: int
    exact: bool
    oldest_age: float
    dead_letter: ConsoleDeadLetter | ConsoleQueueDetailDeadLetterType0Type0 | None
    dead_letter_sources: list[str]
    totals: ConsoleTotals
    consumers: ConsoleConsumers
    can: ConsoleCan
    settings: ConsoleSettings
    tags: ConsoleQueueDetailTags
    created_at: float
    moves: list[ConsoleMove]





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_can import ConsoleCan # noqa: PLC0415
        from ..models.console_consumers import ConsoleConsumers # noqa: PLC0415
        from ..models.console_dead_letter import ConsoleDeadLetter # noqa: PLC0415
        from ..models.console_move import ConsoleMove # noqa: PLC0415
        from ..models.console_queue_detail_dead_letter_type_0_type_0 import ConsoleQueueDetailDeadLetterType0Type0 # noqa: PLC0415
        from ..models.console_queue_detail_tags import ConsoleQueueDetailTags # noqa: PLC0415
        from ..models.console_settings import ConsoleSettings # noqa: PLC0415
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
        if isinstance(self.dead_letter, ConsoleQueueDetailDeadLetterType0Type0):
            dead_letter = self.dead_letter.to_dict()
        elif isinstance(self.dead_letter, ConsoleDeadLetter):
            dead_letter = self.dead_letter.to_dict()
        else:
            dead_letter = self.dead_letter

        dead_letter_sources = self.dead_letter_sources



        totals = self.totals.to_dict()

        consumers = self.consumers.to_dict()

        can = self.can.to_dict()

        settings = self.settings.to_dict()

        tags = self.tags.to_dict()

        created_at = self.created_at

        moves = []
        for moves_item_data in self.moves:
            moves_item = moves_item_data.to_dict()
            moves.append(moves_item)




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
            "settings": settings,
            "tags": tags,
            "created_at": created_at,
            "moves": moves,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_can import ConsoleCan # noqa: PLC0415
        from ..models.console_consumers import ConsoleConsumers # noqa: PLC0415
        from ..models.console_dead_letter import ConsoleDeadLetter # noqa: PLC0415
        from ..models.console_move import ConsoleMove # noqa: PLC0415
        from ..models.console_queue_detail_dead_letter_type_0_type_0 import ConsoleQueueDetailDeadLetterType0Type0 # noqa: PLC0415
        from ..models.console_queue_detail_tags import ConsoleQueueDetailTags # noqa: PLC0415
        from ..models.console_settings import ConsoleSettings # noqa: PLC0415
        from ..models.console_totals import ConsoleTotals # noqa: PLC0415
        d = dict(src_dict)
        store_name = d.pop("store_name")

        door = check_console_queue_detail_door(d.pop("door"))




        name = d.pop("name")

        kind = check_console_queue_detail_kind(d.pop("kind"))




        ready = d.pop("ready")

        claimed = d.pop("claimed")

        delayed = d.pop("delayed")

        exact = d.pop("exact")

        oldest_age = d.pop("oldest_age")

        def _parse_dead_letter(data: object) -> ConsoleDeadLetter | ConsoleQueueDetailDeadLetterType0Type0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dead_letter_type_0_type_0 = ConsoleQueueDetailDeadLetterType0Type0.from_dict(data)



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
            return cast(ConsoleDeadLetter | ConsoleQueueDetailDeadLetterType0Type0 | None, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter"))


        dead_letter_sources = cast(list[str], d.pop("dead_letter_sources"))


        totals = ConsoleTotals.from_dict(d.pop("totals"))




        consumers = ConsoleConsumers.from_dict(d.pop("consumers"))




        can = ConsoleCan.from_dict(d.pop("can"))




        settings = ConsoleSettings.from_dict(d.pop("settings"))




        tags = ConsoleQueueDetailTags.from_dict(d.pop("tags"))




        created_at = d.pop("created_at")

        moves = []
        _moves = d.pop("moves")
        for moves_item_data in (_moves):
            moves_item = ConsoleMove.from_dict(moves_item_data)



            moves.append(moves_item)


        console_queue_detail = cls(
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
            settings=settings,
            tags=tags,
            created_at=created_at,
            moves=moves,
        )

        return console_queue_detail

