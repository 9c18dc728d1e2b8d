"""One config checker for ``spoolq check-config``, ``spoolq serve`` and its reload
(:mod:`spoolq.config.check`): every mistake at once, unknown keys at every level with the closest
known one, no ``ok`` line for a file with a mistake, and what a reload changes said without a secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spoolq.config.check import check, describe_changes
from spoolq.settings.server import load_settings
from tests.cli.run import CHECKOUT, spoolq
from tests.e2e.spoolq_server import free_port

#: a file with a mistake at every level, each on the line the checker must print
MISTAKES = """\
api_keys:
  - name: shop
    key: secret-shop-key
    permissions: ["queue|pots|orders", "queue|post|orders", "queue|post|ord ers"]
    sqs_credentials: [{access_key_id: AKIASHOP, secret_acess_key: s3cr3t}]
  - name: reader
    kee: another-key
    permissions: "queue|poll|*"
anonymous:
  permisions: []
queue_defaults:
  archive: yes please
  archive_retenton: 30d
queue:
  - name: orders
    door: emodb
queues:
  - name: jobs
    door: mq
    retension: 3d
    visibility_timeout: [1]
"""
EXPECTED = [
    "config: unknown key 'queue' (did you mean 'queues'?)",
    "config: anonymous: unknown key 'permisions' (did you mean 'permissions'?)",
    "config: api_keys[0].permissions[0]: permission 'queue|pots|orders': unknown action 'pots'",
    "config: api_keys[0].permissions[2]: permission 'queue|post|ord ers': the queue 'ord ers' is not a queue name",
    "config: api_keys[0].sqs_credentials[0]: unknown key 'secret_acess_key' (did you mean 'secret_access_key'?)",
    "config: api_keys[1]: unknown key 'kee' (did you mean 'key'?)",
    "config: api_keys[1].permissions must be a list of permissions",
    "config: api_keys[1] (reader) needs sha256 (or key), sqs_credentials, or both",
    "config: queue_defaults: unknown key 'archive_retenton' (did you mean 'archive_retention'?)",
    "config: queue_defaults.archive must be true or false, got \"yes please\"",
    "config: queues[0] (jobs): unknown key 'retension' (did you mean 'retention'?)",
    "config: queues[0] (jobs): visibility_timeout must be a whole number, got [1]",
]


def _problems(tmp_path: Path, text: str) -> list[str]:
    config = tmp_path / "spoolq.yaml"
    config.write_text(text)
    return check(load_settings({"root": tmp_path / "root", "config": config}, environ={})).problems


def test_every_mistake_at_every_level_at_once(tmp_path: Path) -> None:
    problems = _problems(tmp_path, MISTAKES)
    assert len(problems) == len(EXPECTED), "\n".join(problems)
    for want in EXPECTED:
        assert any(p.startswith(want) for p in problems), (want, problems)
    assert not any("secret-shop-key" in p or "s3cr3t" in p for p in problems)


@pytest.mark.parametrize(("text", "says"), [
    ("api_keys:\n  - name: a\n   key: k\n", "is not valid YAML: line 3, column 4: "),
    ("api_keys: [", "is not valid YAML: line 1, column 12: "),
    ("- just\n- a list\n", "must be a mapping at the top level"),
    ("queues:\n  - {name: q, door: emodb, delay: '10 minutes'}\n", "delay must be a number of seconds"),
    ("api_keys:\n  - {name: a, key: 42, permissions: []}\n", "api_keys[0].key must be a non-empty string"),
    ("queues:\n  - {name: a, door: emodb}\n  - {name: b, door: emodb, dead_letter: {queue: a, max_recieves: 5}}\n",
     "queues[1] (b): dead_letter: unknown key 'max_recieves' (did you mean 'max_receives'?)"),
])
def test_one_line_for_each_kind_of_mistake(tmp_path: Path, text: str, says: str) -> None:
    problems = _problems(tmp_path, text)
    assert len(problems) == 1 and says in problems[0], problems


def test_check_config_prints_every_mistake_and_no_ok_line_for_the_file(tmp_path: Path) -> None:
    config = tmp_path / "spoolq.yaml"
    config.write_text(MISTAKES)
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(config))
    assert done.returncode == 2, done.stdout
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED: ")]
    assert len(failed) == len(EXPECTED), done.stdout
    assert "ok: config" not in done.stdout and "declared queues" not in done.stdout
    # the file's mistakes do not hide the other checks' lines, and the root is not made
    assert done.stdout.splitlines()[-1].startswith(f"ok: root {tmp_path / 'root'} does not exist yet")
    assert not (tmp_path / "root").exists()


def test_serve_refuses_with_every_mistake_before_listening(tmp_path: Path) -> None:
    config = tmp_path / "spoolq.yaml"
    config.write_text(MISTAKES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(tmp_path / "root"), "--port",
                           str(free_port()), "--config", str(config)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 2
    for want in EXPECTED:
        assert f"spoolq: {want}" in done.stderr, (want, done.stderr)
    assert "serving" not in done.stderr and "Traceback" not in done.stderr


def test_a_misspelt_section_is_not_an_ok_config(tmp_path: Path) -> None:
    """``queue:`` for ``queues:`` declared nothing and passed as ``ok: config`` before."""
    config = tmp_path / "spoolq.yaml"
    config.write_text("queue:\n  - {name: orders, door: emodb}\n")
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(config))
    assert done.returncode == 2
    assert "FAILED: config: unknown key 'queue' (did you mean 'queues'?)" in done.stdout.splitlines()
    assert "ok: config" not in done.stdout


def test_what_a_reload_changes_is_said_without_a_secret(tmp_path: Path) -> None:
    before = """\
api_keys:
  - {name: shop, key: old-secret-key, permissions: ["queue|post|orders"]}
  - {name: audit, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, permissions: []}
  - name: sqs
    sqs_credentials: [{access_key_id: AKIAOLD, secret_access_key: old-sqs-secret}]
    permissions: ["queue"]
queues:
  - {name: orders, door: emodb}
  - {name: jobs, door: mq}
"""
    after = """\
api_keys:
  - {name: shop, key: new-secret-key, permissions: ["queue|post,poll|orders"]}
  - name: sqs
    sqs_credentials: [{access_key_id: AKIANEW, secret_access_key: new-sqs-secret}]
    permissions: ["queue"]
  - {name: billing, key: billing-secret, permissions: []}
queue_defaults: {archive: true}
queues:
  - {name: orders, door: emodb, retention: 3d}
  - {name: builds, door: disque}
"""
    checks = []
    for i, text in enumerate((before, after)):
        config = tmp_path / f"spoolq{i}.yaml"
        config.write_text(text)
        checks.append(check(load_settings({"root": tmp_path / "root", "config": config}, environ={})))
    assert all(c.ok for c in checks), [c.problems for c in checks]
    said = describe_changes(*checks)
    assert said == ["identities added: billing", "identities removed: audit",
                    "identity shop: API key, permissions changed", "identity sqs: SigV4 credentials changed",
                    "queue_defaults changed", "declared queues added: builds",
                    "declared queues no longer declared (kept as they are): jobs", "declared queues changed: orders"]
    text = " ".join(said)
    for secret in ("old-secret-key", "new-secret-key", "AKIA", "sqs-secret", "9f86d0", "billing-secret"):
        assert secret not in text
    assert describe_changes(checks[1], checks[1]) == []
