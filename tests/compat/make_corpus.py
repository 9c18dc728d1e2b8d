"""Make the compatibility corpus: data directories written by earlier versions of spoolq, under load,
by those versions' own code.

    .venv/bin/python tests/compat/make_corpus.py            # every version of VERSIONS
    .venv/bin/python tests/compat/make_corpus.py 2026-11-25 # one

For each version (a commit of this repository's history, named in :data:`VERSIONS` with the day
it was main), the script checks the commit out into a temporary ``git worktree`` and runs that
tree's own ``spoolq serve`` (``PYTHONPATH`` = its ``service/``, this checkout's virtualenv for the
libraries). Before the server starts, that version's own store (in a subprocess of its code) makes
the queues no door can configure in every version (an archived queue). Then, through the doors:

* EmoDB ``orders``: 12 threads send; pollers claim and acknowledge some, keep others claimed (a
  claim of an hour and one of two seconds), so ``ready/``, ``claimed/`` and ``acked`` ones coexist;
* EmoDB dedup ``digest``: identical payloads sent twice (one copy pending each);
* SQS ``jobs.fifo``: messages in four groups with deduplication ids, some sent twice (refused as
  duplicates), one group's head claimed; SQS ``later``: messages delayed 15 minutes;
* ``audit`` (archive on): sent, claimed and acknowledged, so acknowledged copies wait for compaction;
* Disque ``builds`` (versions with the Disque door): ADDJOB, some taken with GETJOB;
* declared queues in the config file (versions that read ``queues:``);
* a move of ``backlog`` (2,000 messages) to ``backlog-moved`` started, and the server killed with
  ``SIGKILL`` a moment later: the move is in progress and the commit journals hold records.

What each send answered is written to ``corpus.json`` in the data directory (the manifest the
tests read: every acknowledged message's tag by queue, the claims, the duplicates refused, the
move, the time it was made and the commit that made it); the directory is packed as
``tests/compat/corpus/<day>.tar.xz``. Message bodies are small JSON or text carrying a unique tag.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import requests

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
#: (the day it was main, the commit, what it is): main at the end of each day of the history, and
#: the last main before the format file
VERSIONS: list[tuple[str, str, str]] = [
    ("2026-11-22", "cd5735c", "main at the end of 22 November 2026 (no Disque door yet)"),
    ("2026-11-23", "2bec3f3", "main at the end of 23 November 2026"),
    ("2026-11-25", "5785722", "main at the end of 25 November 2026"),
    ("2026-11-28", "7d23772", "main on 28 November 2026: the last version without a format file"),
]
REGION = "us-east-1"
BACKLOG = 2000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def checked_out(commit: str) -> Iterator[Path]:
    """The tree of ``commit`` in a temporary ``git worktree`` (removed afterwards)."""
    where = Path(tempfile.mkdtemp(prefix="spoolq-corpus-src-"))
    tree = where / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), commit], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(where, ignore_errors=True)


def has(tree: Path, relative: str) -> bool:
    return (tree / "service" / "spoolq" / relative).exists()


def env_for(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = str(tree / "service")
    return env


PRE_STEP = """
import sys
from spoolq.store.filestore import FileStore
from spoolq.store.model import QueueConfig
store = FileStore(sys.argv[1], node_id="corpus")
store.create_queue("audit", config=QueueConfig(archive=True))
store.close()
"""

DECLARED = """
queues:
  - name: declared-orders
    door: emodb
    visibility_timeout: 45s
  - name: declared-jobs.fifo
    door: sqs
    content_based_dedup: true
"""


class Load:
    """Drives one running server through its doors and records what was acknowledged."""

    def __init__(self, url: str, disque_port: int | None) -> None:
        self.url, self.disque_port = url, disque_port
        self.http = requests.Session()
        self.lock = threading.Lock()
        self.pending: dict[str, list[str]] = {}  # store queue name -> tags acknowledged, not acked by a consumer
        self.claimed: dict[str, dict[str, float]] = {}  # store queue -> tag -> claim expiry (epoch s)
        self.notes: dict[str, Any] = {}
        self.sqs = boto3.client("sqs", endpoint_url=url, region_name=REGION, aws_access_key_id="x",
                                aws_secret_access_key="x")

    def _keep(self, queue: str, tag: str) -> None:
        with self.lock:
            self.pending.setdefault(queue, []).append(tag)

    def emodb_send(self, queue: str, tag: str, dedup: bool = False) -> None:
        door = "dedupq" if dedup else "queue"
        r = self.http.post(f"{self.url}/{door}/1/{queue}/send", json={"tag": tag}, timeout=30)
        r.raise_for_status()
        self._keep(f"__dedupq:{queue}" if dedup else queue, tag)

    def emodb_poll(self, queue: str, limit: int, ttl: int) -> list[dict[str, Any]]:
        r = self.http.get(f"{self.url}/queue/1/{queue}/poll", params={"limit": limit, "ttl": ttl}, timeout=30)
        r.raise_for_status()
        got: list[dict[str, Any]] = r.json()
        return got

    def emodb_ack(self, queue: str, got: list[dict[str, Any]]) -> None:
        if not got:
            return
        self.http.post(f"{self.url}/queue/1/{queue}/ack", json=[m["id"] for m in got], timeout=30).raise_for_status()
        with self.lock:
            done = {m["payload"]["tag"] for m in got}
            self.pending[queue] = [t for t in self.pending.get(queue, []) if t not in done]

    def standard(self) -> None:
        """``orders``: 12 senders; then some acknowledged, some claimed for an hour, some for 2 s."""
        threads = [threading.Thread(target=lambda k=k: [self.emodb_send("orders", f"orders-{k}-{i}")
                                                        for i in range(25)]) for k in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.emodb_ack("orders", self.emodb_poll("orders", 60, 30))
        for ttl, count in ((3600, 40), (2, 20)):
            got = self.emodb_poll("orders", count, ttl)
            with self.lock:
                for m in got:
                    self.claimed.setdefault("orders", {})[m["payload"]["tag"]] = time.time() + ttl

    def dedup(self) -> None:
        for i in range(20):
            for _ in range(2):  # the second copy collapses into the first while it is pending
                self.emodb_send("digest", f"digest-{i}", dedup=True)

    def fifo(self) -> None:
        url = self.sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        account = url.rstrip("/").split("/")[-2]  # the service's default account (it changed over time)
        name = f"sqs:{account}:{REGION}:jobs.fifo"
        refused = []
        for i in range(40):
            group = f"g{i % 4}"
            for attempt in range(2 if i % 5 == 0 else 1):
                r = self.sqs.send_message(QueueUrl=url, MessageBody=f"fifo-{i}", MessageGroupId=group,
                                          MessageDeduplicationId=f"d-{i}")
                if attempt == 0:
                    self._keep(name, f"fifo-{i}")
                    first = r["MessageId"]
                else:
                    assert r["MessageId"] == first, "a duplicate within the window answers the first id"
                    refused.append(f"d-{i}")
        got = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=3600)
        for m in got.get("Messages", []):
            self.claimed.setdefault(name, {})[m["Body"]] = time.time() + 3600
        self.notes["fifo_queue"] = name
        self.notes["fifo_dedup_ids"] = [f"d-{i}" for i in range(40)]
        self.notes["fifo_groups"] = {f"fifo-{i}": f"g{i % 4}" for i in range(40)}
        delayed = self.sqs.create_queue(QueueName="later")["QueueUrl"]
        for i in range(15):
            self.sqs.send_message(QueueUrl=delayed, MessageBody=f"later-{i}", DelaySeconds=900)
            self._keep(f"sqs:{account}:{REGION}:later", f"later-{i}")
        self.notes["delayed_until"] = time.time() + 900

    def archive(self) -> None:
        for i in range(30):
            self.emodb_send("audit", f"audit-{i}")
        self.emodb_ack("audit", self.emodb_poll("audit", 20, 60))

    def disque(self) -> None:
        if self.disque_port is None:
            return
        with socket.create_connection(("127.0.0.1", self.disque_port), timeout=30) as s:
            f = s.makefile("rwb")

            def call(*args: str) -> bytes:
                f.write(f"*{len(args)}\r\n".encode() + b"".join(
                    f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args))
                f.flush()
                return f.readline()

            for i in range(20):
                answer = call("ADDJOB", "builds", f"build-{i}", "0")
                if answer.startswith(b"$"):  # a bulk string: the id on the next line
                    answer = b"+" + f.readline()
                assert answer.startswith(b"+D-"), answer
                self._keep("disque:builds", f"build-{i}")
            answer = call("GETJOB", "NOHANG", "FROM", "builds")  # one job taken, not acknowledged
            assert answer.startswith(b"*"), answer

    def backlog(self) -> None:
        for k in range(0, BACKLOG, 100):
            batch = [{"tag": f"backlog-{i}"} for i in range(k, k + 100)]
            self.http.post(f"{self.url}/queue/1/backlog/sendbatch", json=batch, timeout=60).raise_for_status()
            for m in batch:
                self._keep("backlog", m["tag"])

    def start_move(self) -> str:
        r = self.http.post(f"{self.url}/queue/1/_move", params={"from": "backlog", "to": "backlog-moved"}, timeout=30)
        r.raise_for_status()
        ref: str = r.json() if isinstance(r.json(), str) else r.json()["id"]
        return ref


@contextlib.contextmanager
def old_server(tree: Path, root: Path, work: Path) -> Iterator[tuple[str, int | None]]:
    """``spoolq serve`` of ``tree`` (its own code) on ``root``: (its URL, its Disque port or None);
    killed with SIGKILL (master and workers at once) when the block ends."""
    env = env_for(tree)
    port = free_port()
    cmd = [sys.executable, "-m", "spoolq.cli", "serve", "--root", str(root), "--port", str(port),
           "--workers", "2", "--threads", "8", "--node-id", "corpus"]
    disque_port = free_port() if has(tree, "disque") else None
    if disque_port is not None:
        cmd += ["--disque-port", str(disque_port)]
    cli_text = "".join(p.read_text() for p in (tree / "service" / "spoolq").rglob("*.py")
                       if "cli" in p.name or p.parent.name == "cli")
    if '"journal"' in cli_text:  # the commit journal: records in journal/ when the server is killed
        cmd += ["--flush", "journal"] + (["--force-flush"] if "--force-flush" in cli_text else [])
    if has(tree, "declared_queues.py") or has(tree, "config/declared_queues.py"):
        (work / "spoolq.yaml").write_text(DECLARED)
        cmd += ["--config", str(work / "spoolq.yaml")]
    with open(work / "server.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, work)
        yield url, disque_port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the server and its workers at once
        proc.wait()


def make(day: str, commit: str, what: str, out_dir: Path) -> Path:
    full = subprocess.run(["git", "-C", str(REPO), "rev-parse", commit], capture_output=True, text=True,
                          check=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="spoolq-corpus-"))
    root = work / "root"
    with checked_out(full) as tree:
        subprocess.run([sys.executable, "-c", PRE_STEP, str(root)], env=env_for(tree), check=True)
        with old_server(tree, root, work) as (url, disque_port):
            load = Load(url, disque_port)
            threads = [threading.Thread(target=step) for step in (load.standard, load.dedup, load.fifo,
                                                                  load.archive, load.disque, load.backlog)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            time.sleep(1.5)  # a background maintenance pass or two (archive compaction, claim expiry)
            ref = load.start_move()
            time.sleep(0.15)  # then killed mid-move
        made_at = time.time()
    manifest = {
        "day": day, "commit": full, "what": what, "made_at": made_at,
        "pending": load.pending, "claimed": load.claimed, "move": {"ref": ref, "from": "backlog",
                                                                   "to": "backlog-moved"},
        "disque": disque_port is not None, "declared": (work / "spoolq.yaml").exists(), **load.notes,
    }
    (root / "corpus.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    status = root / "moves" / f"{ref}.json"
    moving = json.loads(status.read_text()) if status.exists() else {"state": "not recorded yet"}
    if moving.get("state") != "IN_PROGRESS":
        raise RuntimeError(f"{day}: the move was {moving.get('state')} when the server was killed; run again")
    out = out_dir / f"{day}.tar.xz"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:xz", preset=9) as tar:
        tar.add(root, arcname="root")
    print(f"{day} ({full[:12]}): {out} {out.stat().st_size // 1024} KiB; move {moving.get('state')} "
          f"{moving.get('moved', '?')}; journals {_journal_sizes(root)}; queues {sorted(load.pending)}")
    shutil.rmtree(work, ignore_errors=True)
    return out


def _journal_sizes(root: Path) -> str:
    j = root / "journal"
    return ", ".join(f"{p.name} {p.stat().st_size}" for p in sorted(j.iterdir())) if j.is_dir() else "none"


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], work: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {(work / 'server.log').read_text()[-2000:]}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError("the server did not become healthy")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("days", nargs="*", help="which versions (their day); default: all")
    p.add_argument("--out", type=Path, default=CORPUS)
    args = p.parse_args()
    for day, commit, what in VERSIONS:
        if not args.days or day in args.days:
            make(day, commit, what, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
