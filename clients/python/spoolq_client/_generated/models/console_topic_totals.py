from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConsoleTopicTotals")



@_attrs_define
class ConsoleTopicTotals:
    """ 
        Attributes:
            published (float):
            delivered (float):
            filtered (float):
            dead_lettered (float):
            failed (float):
     """

    published: float
    delivered: float
    filtered: float
    dead_lettered: float
    failed: float





    def to_dict(self) -> dict[str, Any]:
        published = self.published

        delivered = self.delivered

        filtered = self.filtered

        dead_lettered = self.dead_lettered

        failed = self.failed


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "published": published,
            "delivered": delivered,
            "filtered": filtered,
            "dead_lettered": dead_lettered,
            "failed": failed,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        published = d.pop("published")

        delivered = d.pop("delivered")

        filtered = d.pop("filtered")

        dead_lettered = d.pop("dead_lettered")

        failed = d.pop("failed")

        console_topic_totals = cls(
            published=published,
            delivered=delivered,
            filtered=filtered,
            dead_lettered=dead_lettered,
            failed=failed,
        )

        return console_topic_totals

