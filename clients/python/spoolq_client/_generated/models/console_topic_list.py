from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.console_topic import ConsoleTopic





T = TypeVar("T", bound="ConsoleTopicList")



@_attrs_define
class ConsoleTopicList:
    """ 
        Attributes:
            topics (list[ConsoleTopic]):
            now (float):
     """

    topics: list[ConsoleTopic]
    now: float





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_topic import ConsoleTopic # noqa: PLC0415
        topics = []
        for topics_item_data in self.topics:
            topics_item = topics_item_data.to_dict()
            topics.append(topics_item)



        now = self.now


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "topics": topics,
            "now": now,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_topic import ConsoleTopic # noqa: PLC0415
        d = dict(src_dict)
        topics = []
        _topics = d.pop("topics")
        for topics_item_data in (_topics):
            topics_item = ConsoleTopic.from_dict(topics_item_data)



            topics.append(topics_item)


        now = d.pop("now")

        console_topic_list = cls(
            topics=topics,
            now=now,
        )

        return console_topic_list

