"""What the contract tests need of a store beyond the contract, for either store."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from spoolq.store import FileStore, QueueStore
from tests.conftest import tree
from tests.http.fakes import FakeStore


def maintain(store: QueueStore) -> None:
    """The store's maintenance pass (an operator hook, not the contract's). The in-memory store's puts
    back the claims that ran out; the rest a pass would do (a delay that came due, retention) it
    sees at its next call."""
    if isinstance(store, (FileStore, FakeStore)):
        store.maintain()


def state_of(store: QueueStore, root: Path) -> Any:
    """Everything the store holds, to check that a refused call changed nothing: the file store's
    files under ``root``, the in-memory store's queues."""
    if isinstance(store, FakeStore):
        return copy.deepcopy(store.queues)
    return tree(root)
