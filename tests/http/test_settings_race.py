"""Concurrent settings changes never lose each other, across processes ("nodes") sharing one root.

Four processes, each with its own app and store on the same root (node ids of their own), change
different settings of one queue at the same moment through the doors that change settings: the
EmoDB door's ``_settings`` (visibility timeout; retention), SQS ``SetQueueAttributes``
(``DelaySeconds``) and SQS ``TagQueue`` (one tag). Each process is the only writer of its setting,
so before each change it must find there exactly the value it wrote last: anything else is a change
of its that another process's change of another setting undid (a read, change and rewrite of the
queue's metadata that raced with its own). A process also checks at the end.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from spoolq.errors import InvalidArgument
from spoolq.http.app import create_app
from spoolq.settings.server import Settings
from spoolq.store import FileStore
from spoolq.store.model import QueueInfo, QueueKind

pytestmark = pytest.mark.timeout(180)

QUEUE = "Race"
STORE_NAME = f"sqs:123456789012:us-east-1:{QUEUE}"
QUEUE_URL = f"http://localhost/123456789012/{QUEUE}"
CHANGES = 40


def _sqs(client: FlaskClient, action: str, body: dict[str, Any]) -> None:
    reply = client.post("/", data=json.dumps(body), headers={
        "X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0",
        "Authorization": "AWS4-HMAC-SHA256 Credential=any/20240101/us-east-1/sqs/aws4_request, "
                         "SignedHeaders=host, Signature=0"})
    assert reply.status_code == 200, reply.data


def _emodb(client: FlaskClient, changes: dict[str, Any]) -> None:
    reply = client.post(f"/queue/1/{STORE_NAME}/_settings", json=changes)
    assert reply.status_code == 200, reply.data


#: each writer: (how it changes its setting to value n, how it reads that setting back)
WRITERS: dict[str, tuple[Callable[[FlaskClient, int], None], Callable[[QueueInfo], int]]] = {
    "visibility": (lambda c, n: _emodb(c, {"visibility_timeout": n}), lambda i: int(i.config.claim_ttl)),
    "retention": (lambda c, n: _emodb(c, {"retention": 3600 + n}), lambda i: int(i.config.retention) - 3600),
    "delay": (lambda c, n: _sqs(c, "SetQueueAttributes", {"QueueUrl": QUEUE_URL, "Attributes": {"DelaySeconds": str(n)}}),
              lambda i: int(i.config.delay)),
    "tag": (lambda c, n: _sqs(c, "TagQueue", {"QueueUrl": QUEUE_URL, "Tags": {"writer": str(n)}}),
            lambda i: int(i.tags.get("writer", "0"))),
}


def _writer(root: str, which: str, start: Any, out: Any) -> None:
    store = FileStore(root, node_id=f"race-{which}", fsync=False)
    app = create_app(Settings(root=Path(root), node_id=f"race-{which}"), store=store)
    client = app.test_client()
    change, read = WRITERS[which]
    undone: list[tuple[int, int]] = []
    start.wait()
    last = 0
    for n in range(1, CHANGES + 1):
        found = read(store.get_queue(STORE_NAME))
        if found != last:
            undone.append((last, found))
        change(client, n)
        last = n
    found = read(store.get_queue(STORE_NAME))
    if found != last:
        undone.append((last, found))
    store.close()
    out.put((which, undone))


def test_concurrent_changes_of_different_settings_are_all_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FileStore(root, node_id="race-setup", fsync=False)
    client = create_app(Settings(root=root, node_id="race-setup"), store=store).test_client()
    _sqs(client, "CreateQueue", {"QueueName": QUEUE, "Attributes": {"VisibilityTimeout": "0", "DelaySeconds": "0",
                                                                   "MessageRetentionPeriod": "3600"}})
    store.close()
    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(len(WRITERS)), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(root), which, start, out)) for which in WRITERS]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=150) for _ in procs)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    undone = {which: found for which, found in results.items() if found}
    assert not undone, f"changes undone by another setting's change (last written, found): {undone}"


def test_a_refused_change_leaves_the_queue_as_it_was(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "root", node_id="race", fsync=False)
    store.create_queue("q", tags={"a": "1"})
    meta = tmp_path / "root" / "queues" / "q" / "meta.json"
    before = meta.read_bytes()

    def refuse(info: QueueInfo) -> QueueInfo:
        raise ValueError("no")
    with pytest.raises(ValueError):
        store.change_queue("q", refuse)
    with pytest.raises(InvalidArgument):
        store.change_queue("q", lambda info: replace(info, kind=QueueKind.FIFO))
    with pytest.raises(InvalidArgument):
        store.change_queue("q", lambda info: replace(info, config=replace(info.config, claim_ttl=-1)))
    assert meta.read_bytes() == before
    assert store.change_queue("q", lambda info: replace(info, tags={**info.tags, "b": "2"})).tags == {"a": "1", "b": "2"}
    store.close()
