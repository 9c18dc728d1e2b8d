from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.console_topic_kind import check_console_topic_kind
from ..models.console_topic_kind import ConsoleTopicKind
from typing import cast

if TYPE_CHECKING:
  from ..models.console_subscription import ConsoleSubscription
  from ..models.console_topic_tags import ConsoleTopicTags
  from ..models.console_topic_totals import ConsoleTopicTotals





T = TypeVar("T", bound="ConsoleTopic")



@_attrs_define
class ConsoleTopic:
    """ 
        Attributes:
            name (str):
            store_name (str): sns:<account>:<region>:<name>
            arn (str):
            region (str):
            kind (ConsoleTopicKind):
            display_name (str):
            tags (ConsoleTopicTags):
            subscriptions (list[ConsoleSubscription]):
            totals (ConsoleTopicTotals):
     """

    name: str
    store_name: str
    arn: str
    region: str
    kind: ConsoleTopicKind
    display_name: str
    tags: ConsoleTopicTags
    subscriptions: list[ConsoleSubscription]
    totals: ConsoleTopicTotals





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_subscription import ConsoleSubscription # noqa: PLC0415
        from ..models.console_topic_tags import ConsoleTopicTags # noqa: PLC0415
        from ..models.console_topic_totals import ConsoleTopicTotals # noqa: PLC0415
        name = self.name

        store_name = self.store_name

        arn = self.arn

        region = self.region

        kind: str = self.kind

        display_name = self.display_name

        tags = self.tags.to_dict()

        subscriptions = []
        for subscriptions_item_data in self.subscriptions:
            subscriptions_item = subscriptions_item_data.to_dict()
            subscriptions.append(subscriptions_item)



        totals = self.totals.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
            "store_name": store_name,
            "arn": arn,
            "region": region,
            "kind": kind,
            "display_name": display_name,
            "tags": tags,
            "subscriptions": subscriptions,
            "totals": totals,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_subscription import ConsoleSubscription # noqa: PLC0415
        from ..models.console_topic_tags import ConsoleTopicTags # noqa: PLC0415
        from ..models.console_topic_totals import ConsoleTopicTotals # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        store_name = d.pop("store_name")

        arn = d.pop("arn")

        region = d.pop("region")

        kind = check_console_topic_kind(d.pop("kind"))




        display_name = d.pop("display_name")

        tags = ConsoleTopicTags.from_dict(d.pop("tags"))




        subscriptions = []
        _subscriptions = d.pop("subscriptions")
        for subscriptions_item_data in (_subscriptions):
            subscriptions_item = ConsoleSubscription.from_dict(subscriptions_item_data)



            subscriptions.append(subscriptions_item)


        totals = ConsoleTopicTotals.from_dict(d.pop("totals"))




        console_topic = cls(
            name=name,
            store_name=store_name,
            arn=arn,
            region=region,
            kind=kind,
            display_name=display_name,
            tags=tags,
            subscriptions=subscriptions,
            totals=totals,
        )

        return console_topic

