from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.console_damaged import ConsoleDamaged
  from ..models.console_server_flush_batch_buckets import ConsoleServerFlushBatchBuckets
  from ..models.console_server_flush_seconds_buckets import ConsoleServerFlushSecondsBuckets





T = TypeVar("T", bound="ConsoleServer")



@_attrs_define
class ConsoleServer:
    """ 
        Attributes:
            version (str):
            format_ (int | None): the on-disk format of the data directory (null: not opened)
            damaged (list[ConsoleDamaged]): files the file system refused lately (this worker)
            node (str):
            root (str):
            free_bytes (int | None):
            fsync (bool):
            flush (str): how sends reach stable storage: journal, syncfs or fsync (none with fsync off)
            workers (int):
            threads (int):
            pid (int):
            started_at (float):
            queues (int):
            flushes (float): group-commit flushes (all workers)
            flush_seconds_avg (float | None):
            flush_batch_avg (float | None):
            flush_seconds_buckets (ConsoleServerFlushSecondsBuckets): cumulative histogram: le -> count
            flush_batch_buckets (ConsoleServerFlushBatchBuckets):
            long_polls_waiting (float):
            open_ (bool):
     """

    version: str
    format_: int | None
    damaged: list[ConsoleDamaged]
    node: str
    root: str
    free_bytes: int | None
    fsync: bool
    flush: str
    workers: int
    threads: int
    pid: int
    started_at: float
    queues: int
    flushes: float
    flush_seconds_avg: float | None
    flush_batch_avg: float | None
    flush_seconds_buckets: ConsoleServerFlushSecondsBuckets
    flush_batch_buckets: ConsoleServerFlushBatchBuckets
    long_polls_waiting: float
    open_: bool





    def to_dict(self) -> dict[str, Any]:
        from ..models.console_damaged import ConsoleDamaged # noqa: PLC0415
        from ..models.console_server_flush_batch_buckets import ConsoleServerFlushBatchBuckets # noqa: PLC0415
        from ..models.console_server_flush_seconds_buckets import ConsoleServerFlushSecondsBuckets # noqa: PLC0415
        version = self.version

        format_: int | None
        format_ = self.format_

        damaged = []
        for damaged_item_data in self.damaged:
            damaged_item = damaged_item_data.to_dict()
            damaged.append(damaged_item)



        node = self.node

        root = self.root

        free_bytes: int | None
        free_bytes = self.free_bytes

        fsync = self.fsync

        flush = self.flush

        workers = self.workers

        threads = self.threads

        pid = self.pid

        started_at = self.started_at

        queues = self.queues

        flushes = self.flushes

        flush_seconds_avg: float | None
        flush_seconds_avg = self.flush_seconds_avg

        flush_batch_avg: float | None
        flush_batch_avg = self.flush_batch_avg

        flush_seconds_buckets = self.flush_seconds_buckets.to_dict()

        flush_batch_buckets = self.flush_batch_buckets.to_dict()

        long_polls_waiting = self.long_polls_waiting

        open_ = self.open_


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "version": version,
            "format": format_,
            "damaged": damaged,
            "node": node,
            "root": root,
            "free_bytes": free_bytes,
            "fsync": fsync,
            "flush": flush,
            "workers": workers,
            "threads": threads,
            "pid": pid,
            "started_at": started_at,
            "queues": queues,
            "flushes": flushes,
            "flush_seconds_avg": flush_seconds_avg,
            "flush_batch_avg": flush_batch_avg,
            "flush_seconds_buckets": flush_seconds_buckets,
            "flush_batch_buckets": flush_batch_buckets,
            "long_polls_waiting": long_polls_waiting,
            "open": open_,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.console_damaged import ConsoleDamaged # noqa: PLC0415
        from ..models.console_server_flush_batch_buckets import ConsoleServerFlushBatchBuckets # noqa: PLC0415
        from ..models.console_server_flush_seconds_buckets import ConsoleServerFlushSecondsBuckets # noqa: PLC0415
        d = dict(src_dict)
        version = d.pop("version")

        def _parse_format_(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        format_ = _parse_format_(d.pop("format"))


        damaged = []
        _damaged = d.pop("damaged")
        for damaged_item_data in (_damaged):
            damaged_item = ConsoleDamaged.from_dict(damaged_item_data)



            damaged.append(damaged_item)


        node = d.pop("node")

        root = d.pop("root")

        def _parse_free_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        free_bytes = _parse_free_bytes(d.pop("free_bytes"))


        fsync = d.pop("fsync")

        flush = d.pop("flush")

        workers = d.pop("workers")

        threads = d.pop("threads")

        pid = d.pop("pid")

        started_at = d.pop("started_at")

        queues = d.pop("queues")

        flushes = d.pop("flushes")

        def _parse_flush_seconds_avg(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        flush_seconds_avg = _parse_flush_seconds_avg(d.pop("flush_seconds_avg"))


        def _parse_flush_batch_avg(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        flush_batch_avg = _parse_flush_batch_avg(d.pop("flush_batch_avg"))


        flush_seconds_buckets = ConsoleServerFlushSecondsBuckets.from_dict(d.pop("flush_seconds_buckets"))




        flush_batch_buckets = ConsoleServerFlushBatchBuckets.from_dict(d.pop("flush_batch_buckets"))




        long_polls_waiting = d.pop("long_polls_waiting")

        open_ = d.pop("open")

        console_server = cls(
            version=version,
            format_=format_,
            damaged=damaged,
            node=node,
            root=root,
            free_bytes=free_bytes,
            fsync=fsync,
            flush=flush,
            workers=workers,
            threads=threads,
            pid=pid,
            started_at=started_at,
            queues=queues,
            flushes=flushes,
            flush_seconds_avg=flush_seconds_avg,
            flush_batch_avg=flush_batch_avg,
            flush_seconds_buckets=flush_seconds_buckets,
            flush_batch_buckets=flush_batch_buckets,
            long_polls_waiting=long_polls_waiting,
            open_=open_,
        )

        return console_server

