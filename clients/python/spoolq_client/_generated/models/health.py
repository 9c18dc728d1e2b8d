from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.health_status import check_health_status
from ..models.health_status import HealthStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.health_config import HealthConfig
  from ..models.health_store import HealthStore





T = TypeVar("T", bound="Health")



@_attrs_define
class Health:
    """ 
        Attributes:
            status (HealthStatus):
            version (str): the spoolq version serving
            format_ (int): the on-disk format it writes (and the newest it reads) in the data directory
            store (HealthStore): details: node and root; for /readyz also free_bytes, free_inodes, headroom (ok, low, full),
                journal_bytes, flush_seconds, the files the file system refuses (damaged), and the warning or the error
            config (HealthConfig | Unset): /readyz under spoolq serve: whether the last start or reload of the config file
                was applied (reload: ok or failed), since when the config in force is (in_force_since, Unix time), the last
                attempt, and what was refused (problems)
     """

    status: HealthStatus
    version: str
    format_: int
    store: HealthStore
    config: HealthConfig | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.health_config import HealthConfig # noqa: PLC0415
        from ..models.health_store import HealthStore # noqa: PLC0415
        status: str = self.status

        version = self.version

        format_ = self.format_

        store = self.store.to_dict()

        config: dict[str, Any] | Unset = UNSET
        if not isinstance(self.config, Unset):
            config = self.config.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "status": status,
            "version": version,
            "format": format_,
            "store": store,
        })
        if config is not UNSET:
            field_dict["config"] = config

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.health_config import HealthConfig # noqa: PLC0415
        from ..models.health_store import HealthStore # noqa: PLC0415
        d = dict(src_dict)
        status = check_health_status(d.pop("status"))




        version = d.pop("version")

        format_ = d.pop("format")

        store = HealthStore.from_dict(d.pop("store"))




        _config = d.pop("config", UNSET)
        config: HealthConfig | Unset
        if isinstance(_config,  Unset):
            config = UNSET
        else:
            config = HealthConfig.from_dict(_config)




        health = cls(
            status=status,
            version=version,
            format_=format_,
            store=store,
            config=config,
        )

        return health

