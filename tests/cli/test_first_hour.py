"""What a new user meets in the first hour, against a real ``spoolq serve``: the start banner, ``spoolq
--version``, a purge or a fetch of a queue that does not exist, a mistyped ``SPOOLQ_URL``, the
long-poll gauge before the first long poll, and the claim-ttl limit of ``/queue/1`` as the docs give it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from spoolq import __version__
from spoolq.http.emodb import wire as emodb_wire
from spoolq.store import model
from spoolq.store.root_format import FORMAT
from tests.cli.run import CHECKOUT, ok, spoolq
from tests.e2e.spoolq_server import Server, free_port, running_server, tree


@pytest.fixture(scope="module")
def disque_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, disque_port: int) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("first-hour"), keys=False, workers=2, threads=8,
                        extra_args=("--disque-port", str(disque_port))) as s:
        yield s


@pytest.fixture
def q() -> str:
    return f"fh-{uuid.uuid4().hex[:10]}"


def test_version() -> None:
    done = spoolq("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"spoolq {__version__} (on-disk format {FORMAT})", done


def test_the_start_banner_gives_the_console_url(server: Server) -> None:
    log = server.log.read_text()
    assert f"console http://127.0.0.1:{server.port}/console/" in log, log
    assert requests.get(f"http://127.0.0.1:{server.port}/console/", timeout=10).status_code == 200


def test_purge_of_a_queue_that_does_not_exist_is_an_error(server: Server, q: str) -> None:
    before = tree(server.root)
    done = spoolq("purge", q, "--yes", url=server.url)
    assert done.returncode == 1 and f"queue {q} does not exist" in done.stderr, done
    assert "purged" not in done.stdout
    done = spoolq("purge", q, "--yes", "--dedup", url=server.url)
    assert done.returncode == 1 and "does not exist" in done.stderr, done
    assert not (server.root / "queues" / q).exists()
    assert {k for k in tree(server.root) if k.startswith("queues/")} == {
        k for k in before if k.startswith("queues/")}
    ok(spoolq("send", q, "1", "2", url=server.url))
    assert ok(spoolq("purge", q, "--yes", url=server.url)).strip() == f"purged {q}"
    assert ok(spoolq("size", q, url=server.url)).strip() == "0"


def test_mq_fetch_from_a_queue_that_does_not_exist_is_404_as_an_add_is(server: Server, q: str) -> None:
    for method, path in (("GET", f"/mq/{q}/messages"), ("POST", f"/mq/{q}/messages"), ("GET", f"/mq/{q}")):
        r = requests.request(method, server.url + path, data=b"x", timeout=10)
        assert r.status_code == 404 and r.headers["Content-Type"].startswith("text/plain"), (method, path, r)
    t0 = time.monotonic()
    r = requests.get(f"{server.url}/mq/{q}/messages", params={"wait": 5}, timeout=10)
    assert r.status_code == 404 and time.monotonic() - t0 < 3  # at once, not after the wait
    assert not (server.root / "queues" / f"mq:{q}").exists()
    assert requests.put(f"{server.url}/mq/{q}", timeout=10).status_code == 201
    assert requests.get(f"{server.url}/mq/{q}/messages", timeout=10).status_code == 204  # exists, empty
    assert requests.post(f"{server.url}/mq/{q}/messages", data=b"m", timeout=10).status_code == 201
    assert requests.get(f"{server.url}/mq/{q}/messages", timeout=10).content == b"m"


def test_service_url_naming_a_door_gets_a_hint_and_sends_nothing(server: Server, q: str) -> None:
    for suffix in ("/queue/1", "/queue/1/", "/dedupq/1", "/console/"):
        done = spoolq("send", q, "1", url=server.url + suffix)
        assert done.returncode == 2, done
        assert f"give the service's base URL ({server.url})" in done.stderr, done.stderr
    done = spoolq("size", q, "--url", server.url + "/queue/1")
    assert done.returncode == 2 and "--url is" in done.stderr, done
    assert not (server.root / "queues" / q).exists()


def test_a_host_that_does_not_resolve_is_reported_as_such(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rn", "true"]).returncode:
        pytest.skip("unshare -rn (a network namespace of our own) is not available")
    # in a network namespace with no network: the name lookup fails here, nothing leaves the machine
    env_path = f"{CHECKOUT / 'service'}:{CHECKOUT / 'clients/python'}"
    done = subprocess.run(["unshare", "-rn", "env", f"PYTHONPATH={env_path}", "SPOOLQ_URL=http://no-such-host.invalid:8480",
                           sys.executable, "-m", "spoolq.cli", "size", "q"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    assert "cannot resolve the host 'no-such-host.invalid'" in done.stderr, done.stderr
    assert "refused" not in done.stderr
    # a port where nothing listens is still a refusal
    done = spoolq("size", "q", url=f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 1 and "connection refused by 127.0.0.1:" in done.stderr, done


def test_long_polls_waiting_is_in_metrics_from_the_start(tmp_path: Path) -> None:
    disque = free_port()
    with running_server(tmp_path, keys=False, workers=2, threads=4, extra_args=("--disque-port", str(disque))) as s:
        deadline = time.monotonic() + 15
        while True:  # the Disque listener starts beside the workers
            text = requests.get(s.url + "/metrics", timeout=10).text
            doors = dict(re.findall(r'^spoolq_long_polls_waiting\{door="(\w+)"\} (\S+)$', text, re.M))
            if "disque" in doors or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert doors == {"queue": "0.0", "dedupq": "0.0", "mq": "0.0", "sqs": "0.0", "disque": "0.0"}, text


def test_queue_1_claim_ttl_limit_is_the_documented_one(server: Server, q: str) -> None:
    ok(spoolq("send", q, "1", url=server.url))
    r = requests.get(f"{server.url}/queue/1/{q}/poll", params={"ttl": 3601}, timeout=10)
    assert (r.status_code, r.text) == (400, "ClaimTtl must be <=1 hour")
    r = requests.get(f"{server.url}/queue/1/{q}/poll", params={"ttl": 3600}, timeout=10)
    assert r.status_code == 200 and len(r.json()) == 1
    assert emodb_wire.MAX_CLAIM_TTL == 3600 and model.MAX_CLAIM_TTL == 43_200
    store_doc = (CHECKOUT / "docs/store.md").read_text()
    [row] = [line for line in store_doc.splitlines() if line.startswith("| claim ttl")]
    assert "0..43,200 s" in row and "/queue/1" in row and "0..3,600 s" in row, row
    assert "at most 3,600 s" in (CHECKOUT / "docs/compatibility.md").read_text()
    assert "0-3600" in spoolq("poll", "--help").stdout
    # the other doors take the store's 12 hours
    assert requests.put(f"{server.url}/mq/{q}", timeout=10).status_code == 201
    requests.post(f"{server.url}/mq/{q}/messages", data=b"m", timeout=10)
    assert requests.get(f"{server.url}/mq/{q}/messages", params={"ttl": 43_200}, timeout=10).status_code == 200
    assert requests.get(f"{server.url}/mq/{q}/messages", params={"ttl": 43_201}, timeout=10).status_code == 400


def test_api_docs_and_user_pages_speak_to_users(server: Server) -> None:
    """The interactive API docs name no file of the repository, and the pages on the doors cite no
    document a reader does not have."""
    spec = requests.get(f"{server.url}/docs/openapi.json", timeout=10).json()
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("description", "summary") and isinstance(item, str):
                    texts.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(spec)
    assert texts
    path = re.compile(r"\b(?:docs|service|tests|clients|scripts|bench)/|\.md\b|\.py\b|\bspoolq\.[a-z_]+\.")
    assert [t for t in texts if path.search(t)] == []
    for page in ("docs/compatibility.md", "docs/disque.md", "docs/http.md", "docs/store.md"):
        text = (CHECKOUT / page).read_text()
        assert not re.search(r"\bseed\b|\bseeds/|shared/", text, re.I), page


def test_a_disque_queue_named_with_capitals_through_the_cli(server: Server, disque_port: int) -> None:
    import redis

    name = f"MyJobs{uuid.uuid4().hex[:6]}"
    with redis.Redis(host="127.0.0.1", port=disque_port, socket_timeout=30) as r:
        deadline = time.monotonic() + 15
        while True:  # the listener starts beside the workers
            try:
                jid = r.execute_command("ADDJOB", name, '{"job": 1}', 0)
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        store = f"disque:{name}"
        assert [m["payload"] for m in json.loads(ok(spoolq("peek", store, "--json", url=server.url)))] == [{"job": 1}]
        assert ok(spoolq("size", store, url=server.url)).strip() == "1"
        [m] = json.loads(ok(spoolq("poll", store, "--json", url=server.url)))
        ok(spoolq("ack", store, m["id"], url=server.url))
        assert r.execute_command("SHOW", jid) is None  # acknowledged through the CLI: gone for Disque too
        assert r.execute_command("QLEN", name) == 0
