"""The ``spoolq`` client commands through the real entry point (``python -m spoolq.cli``, a subprocess),
against a real ``spoolq serve``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spoolq.store import FileStore
from spoolq.store.model import OutgoingMessage, QueueKind
from spoolq_client import SpoolqClient
from tests.cli.run import ok, spoolq
from tests.client.faults import FaultProxy
from tests.e2e.spoolq_server import KEY_ALL, KEY_NONE, Server, free_port, running_server


def test_send_from_arguments_file_and_stdin(server: Server, qname: str, tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text('{"from": "file"}\n')
    assert json.loads(ok(spoolq("send", qname, '{"a": 1}', "plain text", "42", "--json", url=server.url))) == {
        "queue": qname, "sent": 3}
    assert ok(spoolq("send", qname, f"@{body}", url=server.url)).strip() == f"sent 1 message to {qname}"
    ok(spoolq("send", qname, url=server.url, stdin='{"from": "stdin"}\n'))
    ok(spoolq("send", qname, "--lines", url=server.url, stdin="1\n2\n\n3\n"))
    ok(spoolq("send", qname, "--string", "7", url=server.url))
    peeked = json.loads(ok(spoolq("peek", qname, "--limit", "100", "--json", url=server.url)))
    assert [m["payload"] for m in peeked] == [{"a": 1}, "plain text", 42, {"from": "file"}, {"from": "stdin"},
                                              1, 2, 3, "7"]


def test_poll_json_then_ack(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, "1", "2", "3", url=server.url))
    polled = json.loads(ok(spoolq("poll", qname, "--limit", "2", "--ttl", "60", "--json", url=server.url)))
    assert [m["payload"] for m in polled] == [1, 2] and all(len(m["id"]) == 40 for m in polled)
    assert json.loads(ok(spoolq("size", qname, "--json", url=server.url))) == {"queue": qname, "size": 3,
                                                                               "claimed": 2}
    ids = "\n".join(m["id"] for m in polled)
    assert json.loads(ok(spoolq("ack", qname, "--json", url=server.url, stdin=ids))) == {"queue": qname,
                                                                                       "acked": 2}
    assert ok(spoolq("size", qname, url=server.url)).strip() == "1"
    text = ok(spoolq("poll", qname, "--wait", "1", "--ack", url=server.url))
    assert re.fullmatch(r"[0-9a-f]{40}\t3\n", text)
    assert ok(spoolq("size", qname, url=server.url)).strip() == "0"


def test_dedup_flag(server: Server, qname: str) -> None:
    ok(spoolq("send", "--dedup", qname, '"x"', '"x"', '"y"', url=server.url))
    assert ok(spoolq("size", "--dedup", qname, url=server.url)).strip() == "2"
    assert ok(spoolq("size", qname, url=server.url)).strip() == "0"


def test_purge_needs_yes(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, "1", url=server.url))
    refused = spoolq("purge", qname, url=server.url)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert ok(spoolq("size", qname, url=server.url)).strip() == "1"
    assert json.loads(ok(spoolq("purge", qname, "--yes", "--json", url=server.url)))["purged"] is True
    assert ok(spoolq("size", qname, url=server.url)).strip() == "0"


def test_queues_table_and_json(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, "1", "2", "3", url=server.url))
    ok(spoolq("send", qname, "4", "--delay", "300", url=server.url))
    ok(spoolq("poll", qname, "--limit", "1", url=server.url))
    rows = json.loads(ok(spoolq("queues", "--prefix", qname, "--json", url=server.url)))
    assert rows == [{"name": qname, "kind": "emodb", "ready": 2, "claimed": 1, "delayed": 1, "exact": True}]
    table = ok(spoolq("queues", "--prefix", qname, url=server.url))
    assert re.search(r"queue\s+kind\s+depth\s+claimed\s+delayed", table)
    assert re.search(rf"{qname}\s+emodb\s+2\s+1\s+1", table)


def test_tail_follows_without_consuming(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, "1", "2", url=server.url))
    out = ok(spoolq("tail", qname, "--json", "--count", "2", "--interval", "0.1", url=server.url))
    assert [json.loads(line)["payload"] for line in out.splitlines()] == [1, 2]
    assert ok(spoolq("size", qname, url=server.url)).strip() == "2"
    out = ok(spoolq("tail", qname, "--timeout-after", "0.5", "--interval", "0.1", url=server.url))
    assert len(out.splitlines()) == 2  # each message once, however many peeks


def test_move_small_json(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, "1", "2", url=server.url))
    result = json.loads(ok(spoolq("move", qname, qname + "-to", "--json", "--interval", "0.1", url=server.url)))
    assert result["status"] == "COMPLETE" and len(result["id"]) == 42
    assert ok(spoolq("size", qname + "-to", url=server.url)).strip() == "2"


def test_move_error_exits_non_zero(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, "1", url=server.url))
    error = json.dumps({"from": qname, "to": "x", "status": "ERROR"})

    def plan(n: int, method: str, path: str) -> str:
        return f"json:{error}" if "/_move/" in path else "pass"
    with FaultProxy(server.url, plan) as proxy:
        done = spoolq("move", qname, qname + "-x", "--interval", "0.1", url=proxy.url)
    assert done.returncode == 1 and "ERROR" in done.stderr and "Traceback" not in done.stderr


def test_one_line_errors(server: Server, qname: str) -> None:
    refused = spoolq("size", qname, url=f"http://127.0.0.1:{free_port()}")
    assert refused.returncode == 1 and "connection refused by" in refused.stderr
    forbidden = spoolq("send", qname, "1", url=server.url, key=KEY_NONE)
    assert forbidden.returncode == 1 and "403 not authorized" in forbidden.stderr and "api-key" in forbidden.stderr
    bad = spoolq("poll", qname, "--limit", "0", url=server.url)
    assert bad.returncode == 1 and "400 bad request: Limit must be >0" in bad.stderr
    bad_name = spoolq("send", "No Such Queue", "1", url=server.url)
    assert bad_name.returncode == 2 and "is not a queue name" in bad_name.stderr
    unknown = spoolq("size", qname, url=server.url, key="no-such-key")
    assert unknown.returncode == 1 and "not authorized" in unknown.stderr and "--api-key" in unknown.stderr
    for done in (refused, forbidden, bad, bad_name, unknown):
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stdout == ""


def test_flags_win_over_environment(server: Server, qname: str) -> None:
    done = spoolq("send", qname, "1", "--url", server.url, "--api-key", KEY_ALL, url="http://127.0.0.1:9",
                  key=KEY_NONE)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_move_progress_on_100k_queue(tmp_path: Path) -> None:
    n = 100_000
    store = FileStore(tmp_path / "root", node_id="cli-fill", fsync=False)
    try:
        body = OutgoingMessage(body=b'{"k":1}')
        for _ in range(n // 1000):
            store.send_batch("big", [body] * 1000, create=QueueKind.STANDARD)
    finally:
        store.close()
    with running_server(tmp_path, keys=True, workers=2) as server:
        done = spoolq("move", "big", "big-moved", "--interval", "0.25", url=server.url, timeout=600)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().endswith(": COMPLETE")
        counts = [int(m.group(1)) for m in re.finditer(r"moved (\d+)/100000", done.stderr)]
        assert len(counts) >= 2 and counts == sorted(counts) and counts[-1] == n, done.stderr[-2000:]
        assert "(COMPLETE)" in done.stderr
        with SpoolqClient(server.url, KEY_ALL) as sq:
            assert sq.size("big-moved") == n and sq.size("big") == 0
