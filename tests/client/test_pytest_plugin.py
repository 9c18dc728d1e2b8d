"""The pytest plugin and ``spoolq.testing``: docs/testing.md's example runs as a user's test suite
would (its own directory, pytest finding the plugin through its entry point), the plugin costs
nothing when no test uses it, the context manager stops what it started, and a missing client
library is named."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
DOC = CHECKOUT / "docs" / "testing.md"


def _python_blocks() -> dict[str, str]:
    """docs/testing.md's Python blocks that start with a ``# <file name>`` line, by file name."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return {b.split("\n", 1)[0][2:].strip(): b for b in blocks if re.match(r"# \w+\.py\n", b)}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPOOLQ_", "AWS_", "PYTEST_"))}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def test_the_documented_example_passes_as_a_users_suite(tmp_path: Path) -> None:
    files = _python_blocks()
    assert set(files) == {"worker.py", "test_worker.py"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          env=_env(), timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout, done.stdout[-2000:]


def test_the_session_server_and_the_context_manager(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef spoolq_session_queues():\n"
        "    return [{'name': 'jobs', 'door': 'mq'}]\n")
    (tmp_path / "test_session.py").write_text(
        "import urllib.request\n\n"
        "def test_one(spoolq_server_session):\n"
        "    assert urllib.request.urlopen(spoolq_server_session.url + '/mq/jobs').status == 200\n\n"
        "def test_two(spoolq_server_session, tmp_path_factory):\n"
        "    (tmp_path_factory.getbasetemp() / 'pids').open('a').write(f'{spoolq_server_session.pid}\\n')\n"
        "    import boto3\n"
        "    assert spoolq_server_session.sqs_client().list_queues().get('QueueUrls') is None\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), "--basetemp", str(tmp_path / "base"), str(tmp_path)], cwd=tmp_path,
                          capture_output=True, text=True, env=_env(), timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    pid = int((tmp_path / "base" / "pids").read_text())
    assert not Path(f"/proc/{pid}").exists(), "the session's server is stopped at the end"


def test_the_context_manager_serves_every_door_and_stops(tmp_path: Path) -> None:
    import requests

    from spoolq.testing import spoolq_server

    with spoolq_server(queues=[{"name": "jobs", "door": "sqs"}], disque=True) as server:
        sqs = server.sqs_client()
        sqs.send_message(QueueUrl=server.queue_url("jobs"), MessageBody="hello")
        assert sqs.receive_message(QueueUrl=server.queue_url("jobs"))["Messages"][0]["Body"] == "hello"
        assert server.redis_client().execute_command("ADDJOB", "builds", "b1", 0)
        assert requests.get(f"{server.url}/queue/1/disque:builds/size", timeout=10).json() == 1
        assert server.env["AWS_ENDPOINT_URL_SQS"] == server.url
        root, pid = server.root, server.pid
        assert root.is_dir()
    assert not Path(f"/proc/{pid}").exists()
    assert not root.exists(), "the temporary data directory is removed"


def test_a_missing_client_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from spoolq.testing import RunningSpoolq

    server = RunningSpoolq(url="http://127.0.0.1:1", root=Path("/nonexistent"), config=Path("/nonexistent"),
                           pid=0, disque_port=1)
    monkeypatch.setitem(sys.modules, "boto3", None)
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ImportError, match=r"needs boto3 \(pip install boto3\)"):
        server.sqs_client()
    with pytest.raises(ImportError, match=r"needs redis \(pip install redis\)"):
        server.redis_client()


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, spoolq.pytest_plugin\n"
            "heavy = {'spoolq.testing', 'spoolq.store', 'spoolq.http', 'flask', 'boto3', 'redis', 'gunicorn'}\n"
            "print(sorted(heavy & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    from importlib.metadata import entry_points

    assert [e.value for e in entry_points(group="pytest11") if e.name == "spoolq"] == ["spoolq.pytest_plugin"]


def test_the_in_memory_option_serves_from_memory_and_removes_it(tmp_path: Path) -> None:
    """``pytest --spoolq-in-memory``: each server's data directory is in /dev/shm, gone when it stops."""
    (tmp_path / "test_memory.py").write_text(
        "import urllib.request\n\n"
        "def test_in_memory(spoolq_server, tmp_path_factory):\n"
        "    (tmp_path_factory.getbasetemp() / 'root').write_text(str(spoolq_server.root))\n"
        "    send = urllib.request.Request(spoolq_server.url + '/queue/1/jobs/send', data=b'1', method='POST',\n"
        "                                  headers={'Content-Type': 'application/json'})\n"
        "    urllib.request.urlopen(send).close()\n"
        "    assert str(spoolq_server.root).startswith('/dev/shm/spoolq-in-memory-')\n"
        "    assert (spoolq_server.root / 'queues').is_dir()\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--spoolq-in-memory",
                           "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "base"), str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    root = Path((tmp_path / "base" / "root").read_text())
    assert not root.exists(), "the in-memory data directory is removed when the server stops"


def test_the_context_manager_in_memory_with_keys_names_its_root() -> None:
    from spoolq.testing import spoolq_server

    keys = {"api_keys": [{"name": "t", "key": "k-test", "permissions": ["queue|*|*"]}]}
    with spoolq_server(in_memory=True, config=keys) as server:
        assert server.root.is_dir() and str(server.root).startswith("/dev/shm/spoolq-in-memory-")
        root = server.root
    assert not root.exists()
    with pytest.raises(ValueError, match="in_memory"), spoolq_server(in_memory=True, fsync=True):
        pass
