"""CLI details: help on every argument with examples, move from a missing queue, sorted queues,
progress as lines or a bar (never both), and ``spoolq check-config``'s exit codes."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from spoolq.cli.dispatch import SERVER_COMMANDS
from spoolq_client.cli import commands
from tests.cli.run import ok, spoolq
from tests.e2e.spoolq_server import Server


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser: the server's and the client's."""
    return {**{c.name: c.parser() for c in SERVER_COMMANDS}, **{c.name: c.parser() for c in commands()}}


def test_every_argument_has_help_and_every_command_an_example() -> None:
    commands = _parsers()
    assert {"serve", "hash-key", "check-config", "backup", "restore", "send", "poll", "ack", "peek", "size",
            "purge", "move", "tail", "queues", "settings"} <= set(commands)
    for name, p in commands.items():
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            assert a.help, f"spoolq {name}: {a.dest} has no help"
        assert p.epilog and "example" in p.epilog and f"spoolq {name}" in p.epilog, name


def test_move_from_a_missing_queue_is_an_error(server: Server, qname: str) -> None:
    done = spoolq("move", qname + "-missing", qname + "-to", url=server.url)
    assert done.returncode == 1 and "does not exist" in done.stderr, done
    assert "COMPLETE" not in done.stdout and "Traceback" not in done.stderr
    ok(spoolq("send", qname, "1", url=server.url))
    # a dedup queue of the same name is another queue
    done = spoolq("move", qname, qname + "-to", "--dedup", url=server.url)
    assert done.returncode == 1 and "does not exist" in done.stderr


def test_queues_sorted_by_name(server: Server, qname: str) -> None:
    for suffix in ("c", "a", "b"):
        ok(spoolq("send", f"{qname}-{suffix}", "1", url=server.url))
    ok(spoolq("send", f"{qname}-0", "1", "--dedup", url=server.url))
    rows = json.loads(ok(spoolq("queues", "--prefix", qname, "--json", url=server.url)))
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows) and len(rows) == 4
    table = ok(spoolq("queues", "--prefix", qname, url=server.url))
    names = [line.split()[0] for line in table.splitlines()[1:]]
    assert names == sorted(names)


def test_progress_is_lines_or_a_bar_never_both(server: Server, qname: str) -> None:
    ok(spoolq("send", qname, *[str(i) for i in range(20)], url=server.url))
    lines = spoolq("move", qname, qname + "-l", "--interval", "0.1", url=server.url)  # not a terminal: lines
    assert lines.returncode == 0
    assert lines.stderr.strip().splitlines()[-1] == "moved 20/20 (COMPLETE)"
    assert "━" not in lines.stderr and "moving" not in lines.stderr
    bar = spoolq("move", qname + "-l", qname, "--interval", "0.1", "--progress", "bar", url=server.url)
    assert bar.returncode == 0 and "moving" in bar.stderr and "━" in bar.stderr
    assert "moved 20/20" not in bar.stderr
    quiet = spoolq("move", qname, qname + "-l", "--progress", "never", url=server.url)
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_check_config_exit_codes(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("api_keys:\n  - {name: a, key: k, permissions: ['queue']}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("api_keys: nope\n")
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(good), "--host", "0.0.0.0")
    assert done.returncode == 0, done.stderr
    assert "ok: root" in done.stdout and not (tmp_path / "root").exists()  # a missing root is not made
    (tmp_path / "root").mkdir()
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(good), "--host", "0.0.0.0")
    assert done.returncode == 0, done.stderr
    assert "ok: root" in done.stdout and not list((tmp_path / "root" / "tmp").iterdir())
    assert spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(bad)).returncode == 2
    assert spoolq("check-config", "--root", str(tmp_path / "r2"), "--host", "0.0.0.0").returncode == 2
    assert spoolq("check-config", "--root", str(tmp_path / "r2"), "--port", "0").returncode == 2
    (tmp_path / "afile").write_text("")
    done = spoolq("check-config", "--root", str(tmp_path / "afile"))
    assert done.returncode == 3 and "root" in done.stdout
    if os.geteuid() != 0:  # root writes through permissions
        ro = tmp_path / "ro"
        (ro / "tmp").mkdir(parents=True)
        ro.chmod(0o500)
        (ro / "tmp").chmod(0o500)
        assert spoolq("check-config", "--root", str(ro)).returncode == 3
