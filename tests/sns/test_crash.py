"""An acknowledged publish survives kill -9 in every matching queue (store/fanout.py's crash rules).

A real spoolq (gunicorn, 2 workers) serves a topic with 10 subscribed queues (6 with the JSON
envelope, 4 raw, one of those with a filter policy that takes half the messages); 4 clients publish
as fast as they can; at a random moment the whole server is killed with SIGKILL. Every publish
the server answered must be in every queue it matches, whole; a publish that was not answered
may be in none, some or all (at least once). Then the server starts again on the same root and
the round repeats.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests

from spoolq.queues import names as queue_names
from spoolq.store.filestore import FileStore
from tests.sns.conftest import drain, sns_client, sqs_client
from tests.sqs.harness import ACCOUNT, REGION, SpoolqProcess

QUEUES = 10
RAW = {6, 7, 8, 9}
FILTERED = 9  # takes only the messages whose attribute "half" is "yes"
CLIENTS = 4


def _rng() -> random.Random:
    seed = int(os.environ.get("SPOOLQ_CRASH_SEED") or time.time_ns())
    print(f"SPOOLQ_CRASH_SEED={seed}")
    return random.Random(seed)


def _publisher(url: str, topic: str, tag: str, acked: list[str], stop: threading.Event) -> None:
    session = requests.Session()
    n = 0
    while not stop.is_set():
        body = f"{tag}-{n}"
        form = {"Action": "Publish", "TopicArn": topic, "Message": body,
                "MessageAttributes.entry.1.Name": "half",
                "MessageAttributes.entry.1.Value.DataType": "String",
                "MessageAttributes.entry.1.Value.StringValue": "yes" if n % 2 else "no"}
        n += 1
        try:
            reply = session.post(url, data=form, timeout=10)
        except requests.RequestException:
            return  # the server died under this publish: not acknowledged
        if reply.status_code == 200:
            acked.append(body)


def _drained(root: Path, names: list[str]) -> list[Counter[str]]:
    """The messages (by the published body) in each queue, read straight from the store."""
    store = FileStore(root, node_id="drain")
    try:
        out = []
        for i, name in enumerate(names):
            found: Counter[str] = Counter()
            queue = queue_names.sqs_store_name(ACCOUNT, REGION, name)
            for batch in drain(store, queue):
                for delivery in batch:
                    text = delivery.message.body.decode()
                    found[text if i in RAW else json.loads(text)["Message"]] += 1
            out.append(found)
        return out
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_acknowledged_publishes_survive_kill_9(tmp_path: Path) -> None:
    rng = _rng()
    root = tmp_path / "root"
    root.mkdir()
    server = SpoolqProcess(root, workers=2, threads=16)
    server.start()
    try:
        sns, sqs = sns_client(server.url), sqs_client(server.url)
        topic = sns.create_topic(Name="crash")["TopicArn"]
        names = [f"crash{i}" for i in range(QUEUES)]
        for i, name in enumerate(names):
            sqs.create_queue(QueueName=name)
            attributes = {"RawMessageDelivery": "true"} if i in RAW else {}
            if i == FILTERED:
                attributes["FilterPolicy"] = json.dumps({"half": ["yes"]})
            sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}",
                          Attributes=attributes)
        total = 0
        for _round in range(3):
            acked: list[str] = []
            stop = threading.Event()
            clients = [threading.Thread(target=_publisher, args=(server.url, topic, f"r{_round}c{c}", acked, stop))
                       for c in range(CLIENTS)]
            for t in clients:
                t.start()
            time.sleep(rng.uniform(1.0, 4.0))
            server.kill()
            stop.set()
            for t in clients:
                t.join(timeout=30)
            assert acked, "nothing was acknowledged before the kill"
            total += len(acked)
            counts = _drained(root, names)
            for i, found in enumerate(counts):
                wanted = [b for b in acked if i != FILTERED or int(b.rsplit("-", 1)[1]) % 2]
                missing = [b for b in wanted if b not in found]
                assert not missing, f"queue {i} lost {len(missing)} acknowledged publishes: {missing[:5]}"
                if i == FILTERED:
                    assert all(int(b.rsplit("-", 1)[1]) % 2 for b in found), "the filter let a message through"
            server.start()
        print(f"{total} acknowledged publishes over 3 kills, each in all of its queues")
    finally:
        server.stop()
