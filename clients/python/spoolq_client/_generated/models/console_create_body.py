from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_create_body_door import check_console_create_body_door
from ..models.console_create_body_door import ConsoleCreateBodyDoor
from ..models.console_create_body_kind import check_console_create_body_kind
from ..models.console_create_body_kind import ConsoleCreateBodyKind
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.console_create_body_tags_type_0 import ConsoleCreateBodyTagsType0
  from ..models.queue_settings_change import QueueSettingsChange





T = TypeVar("T", bound="ConsoleCreateBody")



@_attrs_define
class ConsoleCreateBody:
    """ 
        Attributes:
            name (str): the name users of that door know (each door's rule applies: 400 when it breaks it)
            kind (ConsoleCreateBodyKind | Unset): the kind of queue: emodb, dedup, sqs, sqs-fifo, mq, disque (or name door
                and fifo)
            door (ConsoleCreateBodyDoor | Unset): whose queue: queue (EmoDB), dedupq (EmoDB dedup), sqs, mq, disque (when no
                kind is named)
            fifo (bool | Unset): SQS: a FIFO queue (the name ends in .fifo) Default: False.
            content_based_dedup (bool | Unset): SQS FIFO queues Default: False.
            region (None | str | Unset): SQS: the region (default: the service's SQS region)
            settings (None | QueueSettingsChange | Unset): settings the queue starts with (the others: their defaults); all
                checked before the queue is made
            tags (ConsoleCreateBodyTagsType0 | None | Unset): tags the queue starts with
     """

    name: str
    kind: ConsoleCreateBodyKind | Unset = UNSET
    door: ConsoleCreateBodyDoor | Unset = UNSET
    fifo: bool | Unset = False
    content_based_dedup: bool | Unset = False
    region: None | str | Unset = UNSET
    settings: None | QueueSettingsChange | Unset = UNSET
    tags: ConsoleCreateBodyTagsType0 | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_create_body_tags_type_0 import ConsoleCreateBodyTagsType0 # noqa: PLC0415
        from ..models.queue_settings_change import QueueSettingsChange # noqa: PLC0415
        name = self.name

        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind


        door: str | Unset = UNSET
        if not isinstance(self.door, Unset):
            door = self.door


        fifo = self.fifo

        content_based_dedup = self.content_based_dedup

        region: None | str | Unset
        if isinstance(self.region, Unset):
            region = UNSET
        else:
            region = self.region

        settings: dict[str, Any] | None | Unset
        if isinstance(self.settings, Unset):
            settings = UNSET
        elif isinstance(self.settings, QueueSettingsChange):
            settings = self.settings.to_dict()
        else:
            settings = self.settings

        tags: dict[str, Any] | None | Unset
        if isinstance(self.tags, Unset):
            tags = UNSET
        elif isinstance(self.tags, ConsoleCreateBodyTagsType0):
            tags = self.tags.to_dict()
        else:
            tags = self.tags


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if kind is not UNSET:
            field_dict["kind"] = kind
        if door is not UNSET:
            field_dict["door"] = door
        if fifo is not UNSET:
            field_dict["fifo"] = fifo
        if content_based_dedup is not UNSET:
            field_dict["content_based_dedup"] = content_based_dedup
        if region is not UNSET:
            field_dict["region"] = region
        if settings is not UNSET:
            field_dict["settings"] = settings
        if tags is not UNSET:
            field_dict["tags"] = tags

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_create_body_tags_type_0 import ConsoleCreateBodyTagsType0 # noqa: PLC0415
        from ..models.queue_settings_change import QueueSettingsChange # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        _kind = d.pop("kind", UNSET)
        kind: ConsoleCreateBodyKind | Unset
        if isinstance(_kind,  Unset):
            kind = UNSET
        else:
            kind = check_console_create_body_kind(_kind)




        _door = d.pop("door", UNSET)
        door: ConsoleCreateBodyDoor | Unset
        if isinstance(_door,  Unset):
            door = UNSET
        else:
            door = check_console_create_body_door(_door)




        fifo = d.pop("fifo", UNSET)

        content_based_dedup = d.pop("content_based_dedup", UNSET)

        def _parse_region(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        region = _parse_region(d.pop("region", UNSET))


        def _parse_settings(data: object) -> None | QueueSettingsChange | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                settings_type_0 = QueueSettingsChange.from_dict(data)



                return settings_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QueueSettingsChange | Unset, data)

        settings = _parse_settings(d.pop("settings", UNSET))


        def _parse_tags(data: object) -> ConsoleCreateBodyTagsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                tags_type_0 = ConsoleCreateBodyTagsType0.from_dict(data)



                return tags_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConsoleCreateBodyTagsType0 | None | Unset, data)

        tags = _parse_tags(d.pop("tags", UNSET))


        console_create_body = cls(
            name=name,
            kind=kind,
            door=door,
            fifo=fifo,
            content_based_dedup=content_based_dedup,
            region=region,
            settings=settings,
            tags=tags,
        )

        return console_create_body

