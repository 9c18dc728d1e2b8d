"""``spoolq backup`` while serving under load, ``spoolq restore``, then count what a new server
delivers: 0 lost, 0 ids twice in one answer, 0 claims stuck until their ttl.

Load on a real ``spoolq serve``: EmoDB and SQS (boto3) senders, EmoDB and SQS pollers that
acknowledge most of what they get and leave the rest claimed (in flight during the backup).
A raw ``cp -a`` of the live root, taken during the same load, is restored the old way (copied
into place) for comparison, and then through ``spoolq restore``, which makes it clean too.
The figures are printed (``-s``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import boto3
import pytest
import requests

from tests.e2e.spoolq_server import Server, free_port

pytestmark = pytest.mark.slow
CHECKOUT = Path(__file__).resolve().parents[2]
EMO, SQS_NAME = "bk-emo", "bk-sqs"


def _spoolq(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    return subprocess.run([sys.executable, "-m", "spoolq.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


class Ledger:
    """What the clients were told: sends acknowledged, acks acknowledged (with times)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent_at: dict[str, float] = {}
        self.ack_started: dict[str, float] = {}
        self.errors: list[str] = []

    def sent(self, body: str, at: float) -> None:
        with self.lock:
            self.sent_at[body] = at

    def acking(self, bodies: list[str], at: float) -> None:
        with self.lock:
            for b in bodies:
                self.ack_started.setdefault(b, at)

    def must_be_in_backup(self, started: float, ended: float) -> set[str]:
        """Sent before the backup began and not acknowledged before it ended."""
        with self.lock:
            return {b for b, t in self.sent_at.items() if t < started and self.ack_started.get(b, ended + 1) > ended}


def _load(url: str, ledger: Ledger, stop: threading.Event) -> list[threading.Thread]:
    sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="a",
                       aws_secret_access_key="b")
    q = sqs.create_queue(QueueName=SQS_NAME, Attributes={"VisibilityTimeout": "60"})["QueueUrl"]

    def emo_sender() -> None:
        with requests.Session() as s:
            while not stop.is_set():
                batch = [f"e-{uuid.uuid4().hex}" for _ in range(5)]
                r = s.post(f"{url}/queue/1/{EMO}/sendbatch", json=batch, timeout=30)
                if r.status_code == 200:
                    now = time.time()
                    for b in batch:
                        ledger.sent(b, now)
                else:
                    ledger.errors.append(f"send {r.status_code}")

    def emo_poller() -> None:
        with requests.Session() as s:
            n = 0
            while not stop.is_set():
                # claims of 2 s: the fifth left unacked returns to ready while the backup runs
                r = s.get(f"{url}/queue/1/{EMO}/poll?ttl=2&limit=5&wait=1", timeout=30)
                got = r.json()
                keep = [m for m in got if (n := n + 1) % 5 != 0]
                if keep:
                    ledger.acking([m["payload"] for m in keep], time.time())
                    s.post(f"{url}/queue/1/{EMO}/ack", json=[m["id"] for m in keep], timeout=30)
                time.sleep(0.05)  # slower than the senders: the backlog stays

    def sqs_sender() -> None:
        client = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="a",
                              aws_secret_access_key="b")
        while not stop.is_set():
            body = f"s-{uuid.uuid4().hex}"
            client.send_message(QueueUrl=q, MessageBody=body)
            ledger.sent(body, time.time())

    def sqs_receiver() -> None:
        client = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="a",
                              aws_secret_access_key="b")
        n = 0
        while not stop.is_set():
            got = client.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            keep = [m for m in got if (n := n + 1) % 5 != 0]
            if keep:
                ledger.acking([m["Body"] for m in keep], time.time())
                client.delete_message_batch(QueueUrl=q, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(keep)])

    with requests.Session() as s:  # a backlog, so that a copy of the root takes a while
        for _ in range(25):
            batch = [f"e-{uuid.uuid4().hex}" for _ in range(100)]
            assert s.post(f"{url}/queue/1/{EMO}/sendbatch", json=batch, timeout=60).status_code == 200
            now = time.time()
            for b in batch:
                ledger.sent(b, now)
    threads = [threading.Thread(target=f, daemon=True)
               for f in (emo_sender, emo_poller, emo_poller, sqs_sender, sqs_receiver)]
    for t in threads:
        t.start()
    return threads


def _copies_in_two_states(root: Path) -> int:
    ids: Counter[tuple[str, str]] = Counter()
    for dirpath, _dirs, files in os.walk(root / "queues"):
        parts = Path(dirpath).relative_to(root / "queues").parts
        if len(parts) >= 2 and parts[1] in ("ready", "claimed", "delayed"):
            for name in files:
                ids[(parts[0], name[:40])] += 1
    return sum(1 for n in ids.values() if n > 1)


def _drain(root: Path, tmp: Path, name: str, seconds: float = 240.0) -> dict[str, object]:
    """Serve ``root`` and receive everything (EmoDB and SQS doors) until three rounds in a row find
nothing (``seconds`` at most); what came. Claims still held then are stuck (their ttl is long)."""
    server = Server(root=root, port=free_port(), config=None, workers=1, threads=8, log=tmp / f"{name}.log")
    server.start()
    try:
        url = server.url
        claimed_at_start = int(requests.get(f"{url}/queue/1/{EMO}/claimcount", timeout=10).json())
        sqs = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="a",
                           aws_secret_access_key="b")
        q = sqs.get_queue_url(QueueName=SQS_NAME)["QueueUrl"]
        received: Counter[str] = Counter()
        answers_with_a_duplicate = 0
        deadline = time.monotonic() + seconds
        idle = 0
        while time.monotonic() < deadline and idle < 3:
            # wait only when the last round found nothing: a round costs no idle second while
            # messages flow (three drains of ~10,000 messages fit the test's time limit)
            wait = 1 if idle else 0
            emo = requests.get(f"{url}/queue/1/{EMO}/poll?ttl=300&limit=500&wait={wait / 2}", timeout=30).json()
            sq = sqs.receive_message(QueueUrl=q, MaxNumberOfMessages=10, WaitTimeSeconds=wait).get("Messages", [])
            for bodies in ([m["payload"] for m in emo], [m["Body"] for m in sq]):
                answers_with_a_duplicate += len(bodies) != len(set(bodies))
                received.update(bodies)
            if emo:
                requests.post(f"{url}/queue/1/{EMO}/ack", json=[m["id"] for m in emo], timeout=30)
            if sq:
                sqs.delete_message_batch(QueueUrl=q, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(sq)])
            idle = idle + 1 if not emo and not sq else 0
        left_claimed = int(requests.get(f"{url}/queue/1/{EMO}/claimcount", timeout=10).json())
        return {"received": received, "in_answer_duplicates": answers_with_a_duplicate,
                "claimed_at_start": claimed_at_start, "stuck_claims": left_claimed}
    finally:
        server.stop()


def test_backup_while_serving_restores_clean(tmp_path: Path) -> None:
    root = tmp_path / "root"
    server = Server(root=root, port=free_port(), config=None, workers=2, threads=16, log=tmp_path / "live.log")
    server.start()
    ledger, stop = Ledger(), threading.Event()
    try:
        threads = _load(server.url, ledger, stop)
        time.sleep(4)
        raw = tmp_path / "raw-cp"
        started = time.time()
        done = _spoolq("backup", str(tmp_path / "backup"), "--root", str(root))
        ended = time.time()
        assert done.returncode == 0, done.stderr
        print(done.stdout.strip())
        raw_started = time.time()
        subprocess.run(["cp", "-a", str(root), str(raw)], check=False, capture_output=True)
        raw_ended = time.time()
        tar = subprocess.run(["tar", "-C", str(root), "-cf", str(tmp_path / "raw.tar"), "."], capture_output=True)
        time.sleep(1)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        server.stop()
    assert not ledger.errors, ledger.errors[:5]
    wanted = ledger.must_be_in_backup(started, ended)
    assert len(wanted) > 50, len(wanted)

    assert _copies_in_two_states(tmp_path / "backup") == 0
    done = _spoolq("restore", str(tmp_path / "backup"), str(tmp_path / "restored"))
    assert done.returncode == 0, done.stderr
    print(done.stdout.strip())
    got = _drain(tmp_path / "restored", tmp_path, "restored")
    received = got["received"]
    assert isinstance(received, Counter)
    lost = wanted - set(received)
    figures = {"must_be_in_backup": len(wanted), "lost": len(lost), "in_answer_duplicates": got["in_answer_duplicates"],
               "claimed_after_restore": got["claimed_at_start"], "stuck_claims": got["stuck_claims"],
               "redelivered": sum(1 for b, n in received.items() if n > 1)}

    # the old way, for comparison: the raw copy put in place as it is
    raw_wanted = ledger.must_be_in_backup(raw_started, raw_ended)
    raw_pairs = _copies_in_two_states(raw)
    shutil.copytree(raw, tmp_path / "raw-in-place", symlinks=True)
    old = _drain(tmp_path / "raw-in-place", tmp_path, "raw-in-place")
    old_received = old["received"]
    assert isinstance(old_received, Counter)
    before = {"ids_in_two_states": raw_pairs, "tar_exit": tar.returncode,
              "not_delivered": len(raw_wanted - set(old_received)),
              "in_answer_duplicates": old["in_answer_duplicates"],
              "stuck_claims": old["stuck_claims"]}
    # the same raw copy through spoolq restore
    done = _spoolq("restore", str(raw), str(tmp_path / "raw-restored"))
    assert done.returncode == 0, done.stderr
    fixed = _drain(tmp_path / "raw-restored", tmp_path, "raw-restored")
    print(json.dumps({"backup_then_restore": figures, "raw_copy_in_place": before,
                      "raw_copy_through_restore": {"in_answer_duplicates": fixed["in_answer_duplicates"],
                                                   "stuck_claims": fixed["stuck_claims"]}}))

    if lost:  # where are they? (a message file holds its body as bytes)
        for b in sorted(lost)[:3]:
            for base in ("backup", "restored"):
                where = subprocess.run(["grep", "-rl", b, str(tmp_path / base)], capture_output=True, text=True)
                print(b, base, where.stdout.strip() or "nowhere")
    assert figures["lost"] == 0, sorted(lost)[:5]
    assert figures["in_answer_duplicates"] == 0 and figures["claimed_after_restore"] == 0
    assert figures["stuck_claims"] == 0
    assert fixed["in_answer_duplicates"] == 0 and fixed["claimed_at_start"] == 0 and fixed["stuck_claims"] == 0
    assert not (tmp_path / "root" / "backup-snapshot").exists()


def test_backup_and_restore_refuse_what_they_must(tmp_path: Path) -> None:
    (tmp_path / "root" / "queues").mkdir(parents=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    done = _spoolq("backup", str(tmp_path / "full"), "--root", str(tmp_path / "root"))
    assert done.returncode == 2 and "exists and is not an empty directory" in done.stderr
    done = _spoolq("backup", str(tmp_path / "root" / "inside"), "--root", str(tmp_path / "root"))
    assert done.returncode == 2 and "inside the root" in done.stderr
    done = _spoolq("backup", str(tmp_path / "b"), "--root", str(tmp_path / "nothing"))
    assert done.returncode == 2 and "not a spoolq root" in done.stderr
    done = _spoolq("restore", str(tmp_path / "root"), str(tmp_path / "full"))
    assert done.returncode == 2 and "stop the service" in done.stderr
    assert (tmp_path / "full" / "x").read_text() == "x"
