"""When a name was deleted is read by ``deleted_at`` in every process and node sharing the root (a record
on disk, kept by the store), so a door can refuse a name deleted moments ago and take it again once its
time is over; SQS's CreateQueue answers it as AWS does (``QueueDeletedRecently``) across two servers on
one root."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from spoolq.store import FileStore, OutgoingMessage, QueueKind
from spoolq.testing import spoolq_server

CHECKOUT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("if_empty", [False, True])
def test_when_a_name_was_deleted_is_read_on_every_node(tmp_path: Path, if_empty: bool) -> None:
    clock = Clock()
    a = FileStore(tmp_path, node_id="a", fsync=False, clock=clock)
    b = FileStore(tmp_path, node_id="b", fsync=False, clock=clock)
    try:
        a.create_queue("sqs:123456789012:us-east-1:orders")
        assert b.deleted_at("sqs:123456789012:us-east-1:orders") is None
        a.delete_queue("sqs:123456789012:us-east-1:orders", if_empty=if_empty)
        clock.now += 59
        assert b.deleted_at("sqs:123456789012:us-east-1:orders") == clock.now - 59
        assert b.list_queues() == []
        assert b.deleted_at("sqs:123456789012:us-east-1:other") is None  # another name: no record
        b.create_queue("sqs:123456789012:us-east-1:orders")
        assert "sqs:123456789012:us-east-1:orders" in a.list_queues()
    finally:
        a.close()
        b.close()


def test_a_create_that_does_not_ask_is_not_held_back(tmp_path: Path) -> None:
    store = FileStore(tmp_path, fsync=False)
    try:
        store.create_queue("jobs")
        store.delete_queue("jobs")
        store.create_queue("jobs")  # EmoDB, MQ, Disque, the console: no such rule
        store.send("jobs", OutgoingMessage(b"x"))
        assert store.size("jobs") == 1
    finally:
        store.close()


def test_a_deletion_in_another_process_is_seen(tmp_path: Path) -> None:
    store = FileStore(tmp_path, node_id="parent", fsync=False)
    try:
        store.create_queue("q", QueueKind.FIFO)
        code = ("import sys; from spoolq.store import FileStore\n"
                "s = FileStore(sys.argv[1], node_id='child', fsync=False); s.delete_queue('q'); s.close()\n")
        subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60,
                       env={"PYTHONPATH": str(CHECKOUT / "service"), "PATH": "/usr/bin:/bin"})
        deleted_at = store.deleted_at("q")
        assert deleted_at is not None and abs(deleted_at - time.time()) < 60
    finally:
        store.close()


def test_sqs_create_queue_within_60_s_of_a_delete_on_another_node(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    with spoolq_server(root=root, extra_args=("--node-id", "n1")) as one, \
            spoolq_server(root=root, extra_args=("--node-id", "n2")) as two:
        sqs1, sqs2 = one.sqs_client(), two.sqs_client()
        url = sqs1.create_queue(QueueName="orders")["QueueUrl"]
        sqs1.delete_queue(QueueUrl=url)
        with pytest.raises(ClientError) as refused:
            sqs2.create_queue(QueueName="orders")
        error = refused.value.response["Error"]
        assert error["Code"] in ("QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently")
        assert error["Message"] == ("You must wait 60 seconds after deleting a queue before you can create "
                                    "another with the same name.")
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert "QueueUrls" not in sqs2.list_queues()
        sqs2.create_queue(QueueName="orders-2")  # another name is created at once
