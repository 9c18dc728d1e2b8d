from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.queue_summary_kind import check_queue_summary_kind
from ..models.queue_summary_kind import QueueSummaryKind
from typing import cast






T = TypeVar("T", bound="QueueSummary")



@_attrs_define
class QueueSummary:
    """ 
        Attributes:
            name (str): name under /queue/1 (or /dedupq/1 for dedup)
            kind (QueueSummaryKind): the kind of queue, as `spoolq create --kind` names it
            ready (int): visible now (estimated beyond limit)
            claimed (int): unexpired claims
            delayed (int): not visible before their due time
            exact (bool): false when ready was estimated
     """

    name: str
    kind: QueueSummaryKind
    ready: int
    claimed: int
    delayed: int
    exact: bool





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        kind: str = self.kind

        ready = self.ready

        claimed = self.claimed

        delayed = self.delayed

        exact = self.exact


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
            "kind": kind,
            "ready": ready,
            "claimed": claimed,
            "delayed": delayed,
            "exact": exact,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        kind = check_queue_summary_kind(d.pop("kind"))




        ready = d.pop("ready")

        claimed = d.pop("claimed")

        delayed = d.pop("delayed")

        exact = d.pop("exact")

        queue_summary = cls(
            name=name,
            kind=kind,
            ready=ready,
            claimed=claimed,
            delayed=delayed,
            exact=exact,
        )

        return queue_summary

