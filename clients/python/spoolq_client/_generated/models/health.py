from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.health_status import check_health_status
from ..models.health_status import HealthStatus
from typing import cast

if TYPE_CHECKING:
  from ..models.health_store import HealthStore





T = TypeVar("T", bound="Health")



@_attrs_define
class Health:
    """ 
        Attributes:
            status (HealthStatus):
            store (HealthStore): details: node and root; for /readyz also free_bytes, flush_seconds, or the error
     """

    status: HealthStatus
    store: HealthStore





    def to_dict(self) -> dict[str, Any]:
        from ..models.health_store import HealthStore # noqa: PLC0415
        status: str = self.status

        store = self.store.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "status": status,
            "store": store,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.health_store import HealthStore # noqa: PLC0415
        d = dict(src_dict)
        status = check_health_status(d.pop("status"))




        store = HealthStore.from_dict(d.pop("store"))




        health = cls(
            status=status,
            store=store,
        )

        return health

