"""A poll that meets a storage error after it claimed some messages (a network file system stalling
or failing over mid-poll) hands out what it claimed, and puts back the message it could not read:
an error answer would leave every claimed message out of sight, delivered to nobody, until its
claim expired."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from spoolq.errors import StorageUnavailable
from spoolq.store import FileStore, OutgoingMessage
from spoolq.store import claiming as claiming_module

Q = "q"


def _store(root: Path, count: int) -> FileStore:
    store = FileStore(root, node_id="n1", fsync=False)
    store.create_queue(Q)
    for i in range(count):
        store.send(Q, OutgoingMessage(body=f"m{i}".encode()))
    return store


def _failing_read(monkeypatch: pytest.MonkeyPatch, fail_on: set[int]) -> None:
    real = claiming_module.read_file
    calls = [0]

    def read_file(path: str, **kw: Any) -> bytes:
        calls[0] += 1
        if calls[0] in fail_on:
            raise OSError(errno.EIO, "Input/output error", path)
        return real(path, **kw)

    monkeypatch.setattr(claiming_module, "read_file", read_file)


def test_a_poll_failing_midway_hands_out_what_it_claimed_and_puts_back_the_rest(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(root, 5)
    _failing_read(monkeypatch, {3})
    first = store.poll(Q, limit=5, claim_ttl=600)
    assert len(first) == 2
    monkeypatch.undo()
    rest = store.poll(Q, limit=5, claim_ttl=600)
    assert len(rest) == 3  # the unread one is back, and the two never tried
    bodies = sorted(d.message.body for d in first + rest)
    assert bodies == [f"m{i}".encode() for i in range(5)]


def test_a_poll_failing_before_any_claim_answers_the_error_and_keeps_the_message(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(root, 1)
    _failing_read(monkeypatch, {1})
    with pytest.raises(StorageUnavailable):
        store.poll(Q, limit=5, claim_ttl=600)
    monkeypatch.undo()
    assert [d.message.body for d in store.poll(Q, limit=5, claim_ttl=600)] == [b"m0"]
