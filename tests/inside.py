"""What white-box tests of the file store reach under its contract, named in one place.

A :class:`~spoolq.store.filestore.FileStore` shows the contract and the operator hooks and
nothing else. A test that checks the files under it, or drives one part of it on its own, takes
the part here: the store's core (:class:`~spoolq.store.queues.StoreCore`: root, clock, writers,
commit, queue handles) or one of the parts built on it.
"""

from __future__ import annotations

from spoolq.store.claiming import Claiming
from spoolq.store.filestore import FileStore
from spoolq.store.moves import MoveRunner
from spoolq.store.queues import StoreCore
from spoolq.store.reading import Reading
from spoolq.store.sending import Sending


def core_of(store: FileStore) -> StoreCore:
    return store._core


def claiming_of(store: FileStore) -> Claiming:
    return store._claiming


def moves_of(store: FileStore) -> MoveRunner:
    return store._moves


def sending_of(store: FileStore) -> Sending:
    return store._sending


def reading_of(store: FileStore) -> Reading:
    return store._reading
