"""``spoolq create`` and ``spoolq settings --create``: a queue of any door made with its settings and tags
from the start (so an archive is on from the first message), against a real server with keys."""

from __future__ import annotations

import json

import requests

from tests.cli.run import ok, spoolq
from tests.e2e.spoolq_server import KEY_ALL, KEY_NONE, Server


def _settings(server: Server, queue: str) -> dict[str, object]:
    return json.loads(ok(spoolq("settings", queue, "--json", url=server.url)))


def test_create_an_archived_emodb_queue_and_send_to_it(server: Server, qname: str) -> None:
    out = ok(spoolq("create", qname, "--archive", "on", "--archive-retention", "7d", "--visibility-timeout", "90s",
                    "--tag", "team=shop", url=server.url))
    assert out.strip() == f"created {qname} (emodb)"
    settings = _settings(server, qname)
    assert settings["archive"] is True and settings["archive_retention"] == 7 * 86_400
    assert settings["visibility_timeout"] == 90


def test_create_an_sqs_fifo_queue_with_its_dead_letter_queue(server: Server, qname: str) -> None:
    dlq = f"{qname}-dlq.fifo"
    ok(spoolq("create", dlq, "--kind", "sqs-fifo", "--region", "eu-west-1", url=server.url))
    created = json.loads(ok(spoolq(
        "create", f"{qname}.fifo", "--kind", "sqs-fifo", "--region", "eu-west-1", "--content-based-dedup",
        "--dead-letter-queue", f"sqs:123456789012:eu-west-1:{dlq}", "--max-receives", "5", "--json", url=server.url)))
    assert created == {"store_name": f"sqs:123456789012:eu-west-1:{qname}.fifo", "door": "sqs",
                       "name": f"{qname}.fifo", "kind": "sqs-fifo"}
    store_name = created["store_name"]
    detail = requests.get(f"{server.url}/console/api/queues/{store_name}", headers={"X-BV-API-Key": KEY_ALL},
                          timeout=10).json()
    assert detail["settings"]["content_based_dedup"] is True and detail["kind"] == "sqs-fifo"
    assert _settings(server, store_name)["dead_letter"] == {"queue": f"sqs:123456789012:eu-west-1:{dlq}",
                                                           "max_receives": 5}


def test_a_refused_setting_makes_no_queue(server: Server, qname: str) -> None:
    done = spoolq("create", qname, "--kind", "mq", "--retention", "5s", url=server.url)
    assert done.returncode == 1 and "retention" in done.stderr, done.stderr
    assert qname not in ok(spoolq("queues", url=server.url))
    again = spoolq("create", qname, "--kind", "disque", url=server.url)
    ok(again)
    exists = spoolq("create", qname, "--kind", "disque", url=server.url)
    assert exists.returncode == 1 and "already exists" in exists.stderr
    refused = spoolq("create", f"{qname}-x", url=server.url, key=KEY_NONE)
    assert refused.returncode == 1 and "may not" in refused.stderr


def test_settings_create_makes_a_missing_queue_with_the_settings(server: Server, qname: str) -> None:
    missing = spoolq("settings", qname, "--archive", "on", url=server.url)
    assert missing.returncode == 1, "without --create a missing queue is still an error"
    ok(spoolq("settings", qname, "--create", "--archive", "on", url=server.url))
    assert _settings(server, qname)["archive"] is True
    ok(spoolq("settings", qname, "--create", "--delay", "5s", url=server.url))  # exists: a change
    assert _settings(server, qname)["delay"] == 5 and _settings(server, qname)["archive"] is True
    ok(spoolq("settings", f"mq:{qname}", "--create", "--retention", "2d", url=server.url))
    assert _settings(server, f"mq:{qname}")["retention"] == 2 * 86_400
