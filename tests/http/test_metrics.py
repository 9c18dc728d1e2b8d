"""/metrics, /healthz, /readyz and the browser redirect of /, on the Flask test client over a real store."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from spoolq.http.app import create_app
from spoolq.http.overview import COUNT_LIMIT
from spoolq.observability.metrics import Metrics
from spoolq.settings.server import Settings
from spoolq.store import FileStore
from spoolq.store.model import DeadLetterPolicy, QueueConfig
from tests.inside import commit_of


def scrape(client: FlaskClient) -> dict[str, list[tuple[dict[str, str], float]]]:
    r = client.get("/metrics")
    assert r.status_code == 200
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(r.get_data(as_text=True)):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def value(samples: dict[str, list[tuple[dict[str, str], float]]], metric: str, **labels: str) -> float:
    return sum(v for lab, v in samples.get(metric, []) if all(lab.get(k) == x for k, x in labels.items()))


@pytest.fixture
def client(tmp_path: Path, file_store: FileStore) -> FlaskClient:
    """Open mode: these tests count requests, so SQS calls go unsigned (with any identity
    configured every SQS request must be SigV4-signed)."""
    return create_app(Settings(root=tmp_path / "root", node_id="metrics-test"), store=file_store).test_client()


def sqs(client: FlaskClient, action: str, params: dict[str, object]) -> dict[str, object]:
    r = client.post("/", data=json.dumps(params), headers={
        "X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"})
    assert r.status_code == 200, r.get_data(as_text=True)
    return dict(json.loads(r.get_data() or b"{}"))


def test_content_type_has_one_charset(client: FlaskClient) -> None:
    r = client.get("/metrics")
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"


def test_sqs_counted_per_action_and_its_messages_counted(client: FlaskClient) -> None:
    url = str(sqs(client, "CreateQueue", {"QueueName": "metered"})["QueueUrl"])
    for i in range(3):
        sqs(client, "SendMessage", {"QueueUrl": url, "MessageBody": f"m{i}"})
    sqs(client, "SendMessageBatch", {"QueueUrl": url, "Entries": [
        {"Id": "a", "MessageBody": "x"}, {"Id": "b", "MessageBody": "y"}]})
    got = sqs(client, "ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10})
    messages = list(got["Messages"])  # type: ignore[call-overload]
    sqs(client, "DeleteMessage", {"QueueUrl": url, "ReceiptHandle": messages[0]["ReceiptHandle"]})
    m = scrape(client)
    assert value(m, "spoolq_http_requests_total", door="sqs", operation="SendMessage") == 3
    assert value(m, "spoolq_http_requests_total", door="sqs", operation="SendMessageBatch") == 1
    assert value(m, "spoolq_http_requests_total", door="sqs", operation="ReceiveMessage") == 1
    assert value(m, "spoolq_http_requests_total", door="sqs", operation="sqs_root") == 0
    assert value(m, "spoolq_messages_total", door="sqs", operation="send") == 5
    assert value(m, "spoolq_messages_total", door="sqs", operation="poll") == len(messages)
    assert value(m, "spoolq_messages_total", door="sqs", operation="ack") == 1
    store_name = "sqs:123456789012:us-east-1:metered"
    assert value(m, "spoolq_queue_messages_total", queue=store_name, operation="send") == 5


def test_emodb_and_mq_messages_counted_once(client: FlaskClient) -> None:
    client.post("/queue/1/q1/sendbatch", json=[1, 2, 3])
    polled = client.get("/queue/1/q1/poll?limit=2").get_json()
    assert client.post("/queue/1/q1/ack", json=[polled[0]["id"]]).status_code == 200
    client.post("/queue/1/q1/ack", json=[polled[0]["id"]])  # acked already: removes nothing
    client.put("/mq/m1")
    client.post("/mq/m1/messages", data=b"raw")
    m = scrape(client)
    assert value(m, "spoolq_messages_total", door="queue", operation="send") == 3
    assert value(m, "spoolq_messages_total", door="queue", operation="poll") == 2
    assert value(m, "spoolq_messages_total", door="queue", operation="ack") == 1
    assert value(m, "spoolq_messages_total", door="mq", operation="send") == 1
    assert value(m, "spoolq_queue_messages_total", queue="q1", operation="send") == 3


def test_per_queue_gauges_and_dead_letters(client: FlaskClient, file_store: FileStore) -> None:
    file_store.create_queue("dlq")
    file_store.create_queue("src", config=QueueConfig(dead_letter=DeadLetterPolicy("dlq", 3)))
    client.post("/queue/1/src/sendbatch", json=[1, 2, 3, 4])
    client.post("/queue/1/src/send?delay=600", json=5)
    client.post("/queue/1/dlq/sendbatch", json=[1, 2])
    client.get("/queue/1/src/poll?limit=1")
    m = scrape(client)
    assert value(m, "spoolq_queue_ready", queue="src", door="queue", name="src") == 3
    assert value(m, "spoolq_queue_claimed", queue="src") == 1
    assert value(m, "spoolq_queue_delayed", queue="src") == 1
    assert value(m, "spoolq_queue_dead_letter_messages", queue="src") == 2
    assert 0 <= value(m, "spoolq_queue_oldest_message_seconds", queue="src") < 60
    assert value(m, "spoolq_store_up") == 1


def test_queue_gauges_are_cached_between_scrapes(client: FlaskClient, file_store: FileStore) -> None:
    client.post("/queue/1/cached/send", json=1)
    calls: list[tuple[str, int | None]] = []
    real = file_store.counts

    def counting(queue: str, limit: int | None = None):  # type: ignore[no-untyped-def]
        calls.append((queue, limit))
        return real(queue, limit)

    file_store.counts = counting  # type: ignore[method-assign]
    services = client.application.extensions["spoolq"]
    services.overview.invalidate()
    first = scrape(client)
    client.post("/queue/1/cached/send", json=2)
    second = scrape(client)
    assert value(first, "spoolq_queue_ready", queue="cached") == value(second, "spoolq_queue_ready", queue="cached") == 1
    assert calls == [("cached", 10_000)]  # one bounded count for two scrapes, never unbounded
    services.overview.invalidate()
    assert value(scrape(client), "spoolq_queue_ready", queue="cached") == 2


def test_long_polls_waiting_and_move_progress(client: FlaskClient, file_store: FileStore) -> None:
    done = threading.Event()

    def poll() -> None:
        client.application.test_client(use_cookies=False).get(
            "/queue/1/idle/poll?wait=1.5", headers={"X-BV-API-Key": "k-all"})
        done.set()

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.4)
    assert value(scrape(client), "spoolq_long_polls_waiting", door="queue") == 1
    t.join()
    assert value(scrape(client), "spoolq_long_polls_waiting", door="queue") == 0
    client.post("/queue/1/from/sendbatch", json=list(range(1500)))
    file_store.create_queue("to")
    ref = file_store.move("from", "to", max_per_second=500)  # progress is saved every 500 messages
    try:
        deadline = time.monotonic() + 10
        moved = 0.0
        while time.monotonic() < deadline and not moved:
            client.application.extensions["spoolq"].overview.invalidate()
            m = scrape(client)
            moved = value(m, "spoolq_move_moved", ref=ref, source="from", destination="to")
            time.sleep(0.3)
        assert 0 < moved < 1500
        assert value(m, "spoolq_moves_in_progress") == 1
    finally:
        file_store.cancel_move(ref)


def test_per_queue_waiting_polls_and_the_latest_poll(client: FlaskClient) -> None:
    """Who is consuming a queue: its waiting long polls, and when it was last polled (an empty
    poll counts; a queue nobody polled has no such sample)."""
    client.post("/queue/1/busy/send", json={"n": 1})
    t = threading.Thread(target=lambda: client.application.test_client(use_cookies=False).get(
        "/queue/1/idle/poll?wait=1.5"))
    started = time.time()
    t.start()
    time.sleep(0.4)
    m = scrape(client)
    assert value(m, "spoolq_queue_polls_waiting", queue="idle", door="queue") == 1
    assert value(m, "spoolq_queue_polls_waiting", queue="busy") == 0
    t.join()
    m = scrape(client)
    assert value(m, "spoolq_queue_polls_waiting", queue="idle", door="queue") == 0
    assert started <= value(m, "spoolq_queue_last_poll_time_seconds", queue="idle", door="queue") <= time.time()
    assert not [lab for lab, _v in m.get("spoolq_queue_last_poll_time_seconds", []) if lab["queue"] == "busy"]
    sqs(client, "CreateQueue", {"QueueName": "jobs"})
    sqs(client, "ReceiveMessage", {"QueueUrl": "http://localhost/123456789012/jobs"})
    assert value(scrape(client), "spoolq_queue_last_poll_time_seconds", queue="sqs:123456789012:us-east-1:jobs",
                 door="sqs") >= started


def test_flush_histograms(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "root", node_id="flush", fsync=True)
    try:
        app = create_app(Settings(root=tmp_path / "root", node_id="flush"), store=store)
        client = app.test_client()
        for i in range(3):
            client.post("/queue/1/durable/send", json=i)
        m = scrape(client)
        assert value(m, "spoolq_flush_seconds_count") >= 3
        assert value(m, "spoolq_flush_batch_size_sum") >= 3
    finally:
        store.close()


def test_journal_flushes_are_counted(tmp_path: Path) -> None:
    """With --flush journal a standard send is made durable by an fdatasync of the commit journal,
    not by the group commit's syncfs: those flushes count in the flush histograms too."""
    store = FileStore(tmp_path / "root", node_id="journal", fsync=True, flush="journal")
    journal = commit_of(store).journal
    if journal is None:
        store.close()
        pytest.skip("no commit journal here (no syncfs or no boot id)")
    try:
        app = create_app(Settings(root=tmp_path / "root", node_id="journal"), store=store)
        client = app.test_client()
        for i in range(3):
            assert client.post("/queue/1/durable/send", json=i).status_code == 200
        m = scrape(client)
        assert journal.flushes >= 3
        assert value(m, "spoolq_flush_seconds_count") == commit_of(store).flushes + journal.flushes
        assert value(m, "spoolq_flush_batch_size_sum") >= 3
    finally:
        store.close()


def test_healthz_and_readyz(client: FlaskClient, root: Path) -> None:
    assert client.get("/healthz").status_code == 200
    r = client.get("/readyz")
    assert r.status_code == 200 and r.get_json()["status"] == "ok"
    shutil.rmtree(root)
    r = client.get("/readyz")
    assert r.status_code == 503 and r.get_json()["status"] == "unavailable"
    assert client.get("/healthz").status_code == 200


def test_root_redirects_browsers_only(client: FlaskClient) -> None:
    r = client.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert r.status_code == 302 and r.headers["Location"].endswith("/console/")
    r = client.get("/")  # "/" is the SQS endpoint: anything but a browser gets SQS's error shape
    assert r.status_code == 405 and r.mimetype == "text/xml"
    r = client.get("/", headers={"Accept": "application/json"})
    assert r.status_code == 405
    assert sqs(client, "ListQueues", {}) is not None  # SQS's POST / is untouched
    page = client.get("/console/")
    assert page.status_code == 200 and b"console.js" in page.data
    assert client.get("/console/static/console.js").status_code == 200


def test_non_http_door_hook(client: FlaskClient) -> None:
    from spoolq.observability.counting import acting_as
    from spoolq.store.model import OutgoingMessage, QueueKind

    services = client.application.extensions["spoolq"]
    with acting_as("disque"):
        services.store().send("disque:jobs", OutgoingMessage(body=b"x"), create=QueueKind.STANDARD)
    services.metrics.command("disque", "ADDJOB", "ok", 0.002)
    m = scrape(client)
    assert value(m, "spoolq_messages_total", door="disque", operation="send") == 1
    assert value(m, "spoolq_commands_total", door="disque", command="ADDJOB", result="ok") == 1
    assert value(m, "spoolq_queue_ready", queue="disque:jobs", door="disque", name="jobs") == 1


def test_published_counts_equal_direct_observations() -> None:
    """Counts and observations kept in the process and published in a batch give exactly what
    prometheus-client's own ``inc``/``observe`` per event give (bucket edges included)."""
    from prometheus_client import CollectorRegistry, Histogram

    from spoolq.observability.metrics import _BUCKETS, Metrics

    metrics = Metrics()
    direct = Histogram("spoolq_http_request_seconds", "", ["door", "operation"], buckets=_BUCKETS,
                       registry=CollectorRegistry())
    values = [0.0, 0.0005, 0.001, 0.0010001, 0.0025, 0.7, 30.0, 30.5, 1e9]
    for i, v in enumerate(values):
        metrics.observe("queue", "send", 200 if i % 3 else 503, v)
        direct.labels("queue", "send").observe(v)
    for v in values[:4]:
        metrics.observe("queue", "send", 200, v)  # published in a second batch, on top of the first
        direct.labels("queue", "send").observe(v)
        metrics.publish()

    def of(family: Any) -> dict[tuple[str, str], float]:
        return {(s.name, s.labels.get("le", "")): s.value for s in family.samples if not s.name.endswith("_created")}

    got = {(name, labels.get("le", "")): v for name in ("spoolq_http_request_seconds_bucket",
                                                        "spoolq_http_request_seconds_sum",
                                                        "spoolq_http_request_seconds_count")
           for labels, v in metrics.samples(name)}
    want = of(next(iter(direct.collect())))
    assert got == want
    requests = {labels["status"]: v for labels, v in metrics.samples("spoolq_http_requests_total")}
    assert requests == {"200": 6 + 4, "503": 3}


def test_counting_alone_is_adding_without_observations() -> None:
    """``_Pending.count`` (every message event) keeps what ``_Pending.add`` of the same counts keeps,
    and says the same of label sets new to the process."""
    from spoolq.observability.metrics import _Pending

    general, quick = _Pending(), _Pending()
    a, b, c = ("m", ("queue", "send")), ("m", ("sqs", "send")), ("q", ("q1", "send"))
    for counts, n in [((a,), 1), ((a, c), 10), ((a, c), 2), ((b,), 0), ((b, c), 3), ((), 5)]:
        assert quick.count(counts, n) == general.add(counts, n)
    assert quick.take() == general.take()
    assert quick.seen == general.seen == {a, b, c}


def test_counts_are_exact_under_concurrent_reads() -> None:
    from spoolq.observability.metrics import Metrics

    metrics = Metrics()
    stop = threading.Event()

    def count() -> None:
        for _ in range(5000):
            metrics.messages("queue", "send", 1, "q")
            metrics.observe("queue", "send", 200, 0.001)

    def read() -> None:
        while not stop.is_set():
            metrics.render()

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=count) for _ in range(4)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    assert sum(v for _l, v in metrics.samples("spoolq_messages_total")) == 20000
    assert sum(v for _l, v in metrics.samples("spoolq_queue_messages_total")) == 20000
    assert sum(v for _l, v in metrics.samples("spoolq_http_request_seconds_count")) == 20000


_PUBLISHER = """
import os, sys, time
from spoolq.observability.metrics import Metrics, PUBLISH_INTERVAL
m = Metrics()
for _ in range(7):
    m.messages("queue", "send", 1, "q")
    m.observe("queue", "send", 200, 0.002)
print("counted", flush=True)
time.sleep(PUBLISH_INTERVAL * 2.5)  # the worker's publisher thread, no read in this process
print("published", flush=True)
m.observe("queue", "send", 200, 0.002)  # pending at exit: published by the exit hook
"""


def test_multiprocess_workers_publish_without_a_read(tmp_path: Path) -> None:
    """In multiprocess mode a worker's counts reach the shared files without a scrape of that
    worker: a new label set at once, later counts from its publisher thread, and what is
    pending at exit then."""
    import os
    import subprocess
    import sys

    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", _PUBLISHER], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None

    def total(name: str) -> float:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(tmp_path))  # type: ignore[no-untyped-call]
        return sum(s.value for f in registry.collect() for s in f.samples if s.name == name)

    assert proc.stdout.readline().strip() == "counted"
    # a label set counted for the first time is published at once: every series is there
    assert 1 <= total("spoolq_messages_total") <= 7
    assert 1 <= total("spoolq_queue_messages_total") <= 7
    assert 1 <= total("spoolq_http_requests_total") <= 7
    assert proc.stdout.readline().strip() == "published"
    assert total("spoolq_messages_total") == 7
    assert total("spoolq_queue_messages_total") == 7
    assert proc.wait(timeout=30) == 0
    assert total("spoolq_http_requests_total") == 8
    assert total("spoolq_http_request_seconds_count") == 8


def test_a_scrape_skips_a_value_file_being_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prometheus-client creates a process's value file empty and sizes it after: a scrape at
    that moment used to fail (500), as when the Disque listener counted its first blocked GETJOB."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    metrics = Metrics()
    written = MmapedDict(str(tmp_path / "counter_4241.db"))  # a worker that counted 3 sends
    written.write_value(mmap_key("spoolq_messages", "spoolq_messages_total", ["door", "operation"],
                                 ["queue", "send"], "Messages sent"), 3.0, 0.0)
    written.close()
    (tmp_path / "gauge_livesum_4242.db").touch()  # another process, between its open and its truncate
    (tmp_path / "counter_4243.db").write_bytes(b"\0\0")
    text = metrics.render().decode()
    assert 'spoolq_messages_total{door="queue",operation="send"} 3.0' in text


_NEW_PROCESS_FILES = """
import os, sys
from prometheus_client.mmap_dict import MmapedDict
for i in range(int(sys.argv[2])):  # a process starts, counts (its file is made), ends (its file goes)
    path = f"{sys.argv[1]}/gauge_livesum_{900000 + i}.db"
    MmapedDict(path).close()
    os.unlink(path)
"""


def test_scrapes_while_processes_create_their_files(tmp_path: Path, file_store: FileStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Processes that start, count for the first time (creating their file) and end (their live
    gauge file removed), thousands of them, while this one scrapes: every scrape answers 200."""
    import subprocess
    import sys

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    client = create_app(Settings(root=tmp_path / "root", node_id="metrics-test"), store=file_store).test_client()
    creator = subprocess.Popen([sys.executable, "-c", _NEW_PROCESS_FILES, str(tmp_path), "5000"])
    scrapes = 0
    try:
        while creator.poll() is None or scrapes == 0:
            r = client.get("/metrics")
            assert r.status_code == 200, r.get_data(as_text=True)[:500]
            scrapes += 1
    finally:
        creator.kill()
        creator.wait()
    assert creator.returncode in (0, -9)


def test_metrics_console_and_sqs_attributes_read_one_count(client: FlaskClient, file_store: FileStore) -> None:
    """The depth on /metrics, the console's queue page and ApproximateNumberOfMessages come from
    the same bounded count (one limit, the count the store keeps per process), so they agree."""
    url = sqs(client, "CreateQueue", {"QueueName": "depth"})["QueueUrl"]
    sqs(client, "SendMessageBatch", {"QueueUrl": url, "Entries": [
        {"Id": str(i), "MessageBody": f"m{i}"} for i in range(7)]})
    store_name = "sqs:123456789012:us-east-1:depth"
    calls: list[tuple[str, int | None]] = []
    real = file_store.counts

    def counting(queue: str, limit: int | None = None):  # type: ignore[no-untyped-def]
        calls.append((queue, limit))
        return real(queue, limit)

    file_store.counts = counting  # type: ignore[method-assign]
    client.application.extensions["spoolq"].overview.invalidate()
    metric = value(scrape(client), "spoolq_queue_ready", queue=store_name)
    console = client.get(f"/console/api/queues/{store_name}")
    assert console.status_code == 200, console.get_data(as_text=True)
    attributes = sqs(client, "GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]})
    assert metric == console.get_json()["ready"] == int(attributes["Attributes"]["ApproximateNumberOfMessages"]) == 7  # type: ignore[index]
    limits = {limit for queue, limit in calls if queue == store_name}
    assert limits == {COUNT_LIMIT}, calls
