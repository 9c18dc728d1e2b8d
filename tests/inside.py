"""What white-box tests of the file store reach under its contract, named in one place.

A :class:`~spoolq.store.filestore.FileStore` shows the contract and the operator hooks and
nothing else. A test that checks the files under it, or drives one part of it on its own, takes
the part here: the store's queues (:class:`~spoolq.store.catalog.QueueCatalog`: the root, the
queue handles), its flush, its writers, its clock, or one of the operations built with them.
"""

from __future__ import annotations

from pathlib import Path

from spoolq.store.archive import Archive
from spoolq.store.catalog import QueueCatalog
from spoolq.store.claim_ends import ClaimEnds
from spoolq.store.claiming import Claiming
from spoolq.store.fileops import TempWriter
from spoolq.store.filestore import FileStore
from spoolq.store.group_commit import GroupCommit
from spoolq.store.layout import IdFactory
from spoolq.store.message_files import MessageFiles
from spoolq.store.moves import MoveRunner
from spoolq.store.queue_writer import QueueWriter
from spoolq.store.reading import Reading
from spoolq.store.root_format import RootFormat
from spoolq.store.sending import Sending


def catalog_of(store: FileStore) -> QueueCatalog:
    return store._catalog


def root_of(store: FileStore) -> Path:
    return store._root


def format_of(store: FileStore) -> RootFormat:
    """The root's on-disk format as this store opened it (and brought it up to its own)."""
    return store._format


def commit_of(store: FileStore) -> GroupCommit:
    return store._commit


def flush_mode_of(store: FileStore) -> str:
    return store._flush_mode


def now_ms_of(store: FileStore) -> int:
    return int(store._clock() * 1000)


def tmp_of(store: FileStore) -> TempWriter:
    return store._tmp


def files_of(store: FileStore) -> MessageFiles:
    return store._sending.files


def ids_of(store: FileStore) -> IdFactory:
    return store._sending.ids


def writer_of(store: FileStore) -> QueueWriter:
    return store._sending.writer


def archive_of(store: FileStore) -> Archive:
    return store._archive


def claiming_of(store: FileStore) -> Claiming:
    return store._claiming


def claim_ends_of(store: FileStore) -> ClaimEnds:
    return store._ends


def moves_of(store: FileStore) -> MoveRunner:
    return store._moves


def sending_of(store: FileStore) -> Sending:
    return store._sending


def reading_of(store: FileStore) -> Reading:
    return store._reading
