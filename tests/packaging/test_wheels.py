"""The three distributions as a user installs them: built as wheels, each set installed into a fresh
virtual environment (the server alone, the client alone, all three), no editable install and no
checkout on ``sys.path`` (commands run from an empty directory with a minimal environment).

There every documented command either works, against a real ``spoolq serve`` started from an
installed venv, or says in one line which package to install; no output holds a traceback. The
commands the documentation names (README, docs/, the clients' READMEs) must all be among the ones
run here, so a newly documented command fails this test until it is exercised.

One server per venv that has the server; the client-only venv talks to the all-three venv's server.
pip's cache makes the installs after the first fast (the pyspark wheel is built once, by bootstrap).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Sequence

import pytest

from tests.packaging.wheels import CLIENT_COMMANDS, DOCUMENTS, SERVER_COMMANDS, Venv, stack_trace

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(900)]  # the wheels and venvs are built in the first test's setup

def documented_commands() -> set[str]:
    """The command names the documents' code examples run as ``spoolq NAME`` (or through the
    client's and the pipelines' own commands)."""
    names: set[str] = set()
    pattern = re.compile(r"(?<![\w/.@:-])(?<!-[a-z] )(?:spoolq|spoolq-client|python3? -m spoolq_client) +"
                         r"(?=([a-z][a-z-]*)(?![\w.]))")  # not `ceph fs authorize spoolq client.spoolq`
    for doc in DOCUMENTS:
        text = doc.read_text()
        fenced = re.findall(r"```.*?```", text, re.S)
        inline = re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", text, flags=re.S))
        for code in fenced + inline:
            names.update(m.group(1) for m in pattern.finditer(code))
    return names - {"spoolq"}  # `podman exec spoolq spoolq queues`: a container named spoolq


def test_every_documented_command_is_run_here() -> None:
    assert documented_commands() <= {*SERVER_COMMANDS, *CLIENT_COMMANDS, "pipeline"}


def _imports(venv: Venv, module: str) -> str | None:
    """Where ``module`` is imported from in the venv (None: it is not installed there)."""
    done = venv.run("python", "-I", "-c", f"import importlib.util as u; s = u.find_spec({module!r}); "
                                          "print(s.origin if s else '')")
    return done.stdout.strip() or None


def _client_session(venv: Venv, cmd: Sequence[str], url: str, queue: str, examples: bool = True) -> None:
    """Every client command, as a user runs them, against the service at ``url`` (``examples``: and
    the examples of their ``--help``)."""
    key = {"SPOOLQ_URL": url}
    (venv.workdir / "order.json").write_text('{"id": 9}\n')
    assert venv.ok(*cmd, "send", queue, '{"id": 7}', '{"id": 8}', **key).strip() == f"sent 2 messages to {queue}"
    venv.ok(*cmd, "send", queue, "@order.json", **key)
    venv.ok(*cmd, "send", queue, "--lines", stdin="a\nb\n", **key)
    assert venv.ok(*cmd, "size", queue, **key).strip() == "5"
    assert len(venv.ok(*cmd, "peek", queue, "--limit", "3", **key).splitlines()) == 3
    assert len(venv.ok(*cmd, "tail", queue, "--count", "2", "--json", **key).splitlines()) == 2
    polled = json.loads(venv.ok(*cmd, "poll", queue, "--limit", "2", "--ttl", "60", "--json", **key))
    assert [m["payload"] for m in polled] == [{"id": 7}, {"id": 8}]
    venv.ok(*cmd, "ack", queue, *[m["id"] for m in polled], **key)
    assert queue in venv.ok(*cmd, "queues", **key)  # the rich table
    assert [q["name"] for q in json.loads(venv.ok(*cmd, "queues", "--prefix", queue, "--json", **key))] == [queue]
    assert "visibility timeout" in venv.ok(*cmd, "settings", queue, **key)
    changed = json.loads(venv.ok(*cmd, "settings", queue, "--visibility-timeout", "2m", "--archive", "on", "--json",
                                 **key))
    assert changed["visibility_timeout"] == 120 and changed["archive"] is True
    created = json.loads(venv.ok(*cmd, "create", queue + "-made", "--kind", "sqs", "--retention", "2d", "--json",
                                 **key))
    assert created["store_name"].startswith("sqs:") and created["store_name"].endswith(":" + queue + "-made")
    assert json.loads(venv.ok(*cmd, "settings", created["store_name"], "--json", **key))["retention"] == 2 * 86_400
    moved = venv.run(*cmd, "move", queue, queue + "-moved", "--progress", "bar", "--interval", "0.1", **key)
    assert moved.returncode == 0 and "moving" in moved.stderr and moved.stdout.strip().endswith("COMPLETE"), moved
    venv.ok(*cmd, "purge", queue + "-moved", "--yes", **key)
    assert venv.ok(*cmd, "size", queue + "-moved", **key).strip() == "0"
    refused = venv.run(*cmd, "size", queue, SPOOLQ_URL="http://127.0.0.1:1")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "connection refused by" in refused.stderr
    if examples:
        assert sum(_run_help_examples(venv, cmd, name, **key) for name in CLIENT_COMMANDS) >= 20


def _run_help_examples(venv: Venv, cmd: Sequence[str], name: str, **extra: str) -> int:
    """Run the examples of ``name --help`` that stand alone (no pipe, no shell syntax, no absolute path);
    each works or fails with one line on stderr (a queue the example names may not exist here).
    ``tail`` is given ``--timeout-after 1`` (it follows until interrupted), a long poll ``--wait 1``.
    The number of examples run."""
    text = venv.ok(*cmd, name, "--help")
    examples = text.split("examples:\n", 1)[1].replace("\\\n", " ").splitlines()  # continued lines joined
    ran = 0
    for line in examples:
        words = shlex.split(line, comments=True)
        if (not words or words[0] != "spoolq" or any(w in ("|", "&&", ";", ">", "<") or "$(" in w
                                                     or w.startswith("/") for w in words)):
            continue
        argv = [*cmd, *words[1:], *(["--timeout-after", "1"] if name == "tail" else []),
                *(["--wait", "1"] if "--wait" in words else [])]
        done = venv.run(*argv, stdin="", **extra)
        assert done.returncode == 0 or (done.returncode in (1, 2) and done.stderr.count("\n") == 1), (argv, done)
        ran += 1
    return ran


def _post(url: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as r:
        assert r.status == 200


def test_server_alone(venvs: dict[str, Venv]) -> None:
    v = venvs["server"]
    assert str(v.path) in (_imports(v, "spoolq") or "")
    assert _imports(v, "spoolq_client") is None and _imports(v, "spoolq_spark") is None
    assert v.ok("spoolq", "--version").startswith("spoolq ")
    listing = v.ok("spoolq", "--help")
    assert "not installed here (install spoolq-client)" in listing and "(install spoolq-spark)" in listing
    for name in SERVER_COMMANDS:
        _run_help_examples(v, ["spoolq"], name)  # most name system paths: run in the session below
    assert len(v.ok("spoolq", "hash-key", "--stdin", stdin="s3cret\n").strip()) == 64
    root = v.workdir / "root"
    assert "ok: root" in v.ok("spoolq", "check-config", "--root", str(root))
    with v.serving(root) as url:
        for i in range(3):
            _post(f"{url}/queue/1/orders/send", json.dumps({"n": i}).encode())
        out = v.ok("spoolq", "backup", str(v.workdir / "copy"), "--root", str(root))
        assert "3 messages" in out, out
    assert "3 messages" in v.ok("spoolq", "restore", str(v.workdir / "copy"), str(v.workdir / "restored"))
    assert v.run("spoolq", "check-config", "--root", str(v.workdir / "restored")).returncode == 0
    for name in CLIENT_COMMANDS:
        v.names_package("spoolq-client", "spoolq", name, "q")
    v.names_package("spoolq-spark", "spoolq", "pipeline", "audit", "./data", "--out", "x")


def test_client_alone(venvs: dict[str, Venv]) -> None:
    v, server = venvs["client"], venvs["all"]
    assert _imports(v, "spoolq") is None and str(v.path) in (_imports(v, "spoolq_client") or "")
    assert not (v.path / "bin/spoolq").exists()  # the server's command is the server's alone
    assert "send" in v.ok("spoolq-client", "--help") and "send" in v.ok("python", "-m", "spoolq_client", "--help")
    for name in SERVER_COMMANDS:
        v.names_package("spoolq", "spoolq-client", name)
    v.names_package("spoolq-spark", "spoolq-client", "pipeline")
    with server.serving(server.workdir / "root-for-client") as url:
        _client_session(v, ["spoolq-client"], url, "from-client-alone")
        _client_session(v, ["python", "-m", "spoolq_client"], url, "from-python-m", examples=False)


def test_all_three(venvs: dict[str, Venv]) -> None:
    v = venvs["all"]
    for module in ("spoolq", "spoolq_client", "spoolq_spark"):
        assert str(v.path) in (_imports(v, module) or ""), module
    listing = v.ok("spoolq", "--help")
    assert "not installed" not in listing
    assert all(f"\n  {name} " in listing for name in (*SERVER_COMMANDS, *CLIENT_COMMANDS, "pipeline"))
    for argv in (["spoolq", "pipeline", "--help"], ["spoolq-spark-pipeline", "--help"],
                 ["python", "-m", "spoolq_spark.pipelines", "--help"]):
        assert "audit" in v.ok(*argv)
    root = v.workdir / "root"
    with v.serving(root) as url:
        _client_session(v, ["spoolq"], url, "from-all-three", examples=False)  # they ran with spoolq-client
        assert "visibility timeout" in v.ok("spoolq-client", "settings", "from-all-three", SPOOLQ_URL=url)
        v.ok("spoolq", "create", "audited", "--archive", "on", SPOOLQ_URL=url)
        v.ok("spoolq", "send", "audited", "1", "2", "3", SPOOLQ_URL=url)
        v.ok("spoolq", "poll", "audited", "--ack", SPOOLQ_URL=url)
        deadline = time.monotonic() + 60  # maintenance moves acknowledged messages into archive segments
        while not list(root.glob("archive/*audited*/*.jsonl")):
            assert time.monotonic() < deadline, "no archive segment within 60 s"
            urllib.request.urlopen(f"{url}/queue/1/audited/poll?ttl=1&limit=1", timeout=10).close()
            time.sleep(0.5)
    audit = ["spoolq", "pipeline", "--master", "local[1]", "audit", str(root), "--out", "audit", "--queue", "audited"]
    if shutil.which("java") is None:  # Spark needs a JVM (scripts/system-deps spark installs one)
        v.names_package("Java", *audit)
    else:
        done = v.run(*audit, timeout=300)  # the pipeline's success: its answer, and no stack trace on the way
        assert done.returncode == 0 and not stack_trace(done.stderr), done.stderr[-3000:]
        assert json.loads(done.stdout.splitlines()[-1])["acked"] == 3
        assert (v.workdir / "audit/report.html").is_file()


USER_TEST = '''\
import json
import urllib.request

import pytest


@pytest.mark.spoolq_queues({"name": "jobs", "door": "emodb", "archive": True})
def test_a_service_sends_and_reads_back(spoolq_server):
    send = urllib.request.Request(spoolq_server.url + "/queue/1/jobs/send", data=b'{"id": 1}', method="POST",
                                  headers={"Content-Type": "application/json"})
    urllib.request.urlopen(send).close()
    with urllib.request.urlopen(spoolq_server.url + "/queue/1/jobs/_settings") as answer:
        assert json.load(answer)["archive"] is True
    with urllib.request.urlopen(spoolq_server.url + "/queue/1/jobs/size") as answer:
        assert json.load(answer) == 1
    assert spoolq_server.env["AWS_ENDPOINT_URL_SQS"] == spoolq_server.url


def test_a_missing_client_library_is_named(spoolq_server_session):
    with pytest.raises(ImportError, match="needs boto3"):
        spoolq_server_session.sqs_client()
'''


def test_a_users_suite_gets_spoolq_server_from_the_server_wheel(venvs: dict[str, Venv]) -> None:
    """The pytest plugin as a user's project meets it: the server wheel and pytest, nothing else (no
    boto3: the SQS client it would hand out is named as missing)."""
    venv = venvs["server"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    done = subprocess.run([str(venv.path / "bin/python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", "pytest"], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (venv.workdir / "test_user_service.py").write_text(USER_TEST)
    ran = venv.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user_service.py", timeout=300)
    assert ran.returncode == 0 and "2 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-2000:]
