"""``spoolq check-config`` checks everything ``spoolq serve`` relies on, one line per check on
stdout, and ``serve`` refuses the same configs (and a busy port) at once, before it says "serving".

The read-only and full roots are real file systems: a tmpfs mounted read-only, or filled, in a
mount namespace of the test's own (``unshare``; root only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spoolq.access.auth import Permission
from spoolq.settings.server import SettingsError
from spoolq.store.filesystems import ext4_without_journal
from tests.cli.run import CHECKOUT, spoolq
from tests.e2e.spoolq_server import free_port

BAD_PERMISSIONS = [
    ("queue|pots|orders", "unknown action 'pots'"),
    ("queue:post:orders", "the first part 'queue:post:orders' must be 'queue'"),
    ("queues|post|orders", "the first part 'queues' must be 'queue'"),
    ("queue|post|orders|x", "4 parts"),
    ("queue|post|ord ers", "the queue 'ord ers' is not a queue name"),
    ("queue|post,|orders", "an empty action"),
    ("queue|get_status|[a]", "the queue '[a]' is not a queue name"),
]
GOOD_PERMISSIONS = ["queue", "*", "queue|*", "queue|post,poll|orders-*", "queue|get_*|sqs:*:*:jobs",
                    "queue|admin|a.b@c:d", "queue|*|*"]


def _config(tmp_path: Path, permission: str) -> Path:
    path = tmp_path / "spoolq.yaml"
    path.write_text(f"api_keys:\n  - name: shop\n    key: k1\n    permissions: ['queue|get_status|*', '{permission}']\n")
    return path


@pytest.mark.parametrize("permission", GOOD_PERMISSIONS)
def test_permissions_that_follow_the_grammar_parse(permission: str) -> None:
    Permission.parse(permission)


@pytest.mark.parametrize(("permission", "problem"), BAD_PERMISSIONS)
def test_check_config_names_the_entry_and_the_bad_part(tmp_path: Path, permission: str, problem: str) -> None:
    with pytest.raises(SettingsError, match=r"must be|unknown|parts|not a queue|empty"):
        Permission.parse(permission)
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(_config(tmp_path, permission)))
    assert done.returncode == 2, done.stdout
    assert done.stderr == ""
    (failed,) = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert failed.startswith("FAILED: config: api_keys[0].permissions[1]: ") and problem in failed, failed
    assert repr(permission) in failed
    assert "ok: config" not in done.stdout  # no ok line for a file with a mistake


def _serve(*args: str, timeout: float = 20) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "serve", "--port", str(free_port()), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)
    return done, time.monotonic() - started


def test_serve_refuses_a_bad_permission_before_listening(tmp_path: Path) -> None:
    done, _took = _serve("--root", str(tmp_path / "root"), "--config", str(_config(tmp_path, "queue|pots|orders")))
    assert done.returncode == 2
    assert "api_keys[0].permissions[1]" in done.stderr and "'pots'" in done.stderr
    assert "serving" not in done.stderr


def test_serve_on_a_busy_port_fails_at_once_with_the_reason(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
        env["PYTHONPATH"] = str(CHECKOUT / "service")
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "spoolq.cli", "serve", "--root", str(tmp_path / "root"),
                               "--port", str(port)], capture_output=True, text=True, env=env, timeout=30)
        took = time.monotonic() - started
    assert done.returncode == 2
    assert f"cannot listen for HTTP on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "serving" not in done.stderr and "gunicorn" not in done.stderr.lower()
    assert took < 4, took  # was: "serving http://..." first, then gunicorn's retries for 5 s


def test_every_flush_mode_serve_accepts_is_checked(tmp_path: Path) -> None:
    for mode in ("syncfs", "journal", "fsync"):
        done = spoolq("check-config", "--root", str(tmp_path / "root"), "--flush", mode)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"flush={mode}" in done.stdout.splitlines()[0]


def test_one_line_per_check_on_stdout(tmp_path: Path) -> None:
    config = _config(tmp_path, "queue|post|orders")
    (tmp_path / "root").mkdir()
    done = spoolq("check-config", "--root", str(tmp_path / "root"), "--config", str(config), "--host", "0.0.0.0")
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and done.stderr == ""
    journal_missing = ext4_without_journal(tmp_path) is not None  # a warning line where the disk is such
    assert [line.split(":")[0] for line in lines] == ["ok"] * 5 + ["warning"] * journal_missing + ["ok"], lines
    assert lines[1].startswith("ok: flush=syncfs (chosen for ")  # the flush that fits the root's file system
    assert lines[2].startswith(f"ok: config {config}") and lines[-1].startswith("ok: root")
    assert not list((tmp_path / "root" / "tmp").iterdir())  # the probe file is gone
    failed = spoolq("check-config", "--root", str(tmp_path / "r2"), "--host", "0.0.0.0")
    assert failed.returncode == 2 and failed.stderr == ""
    assert [line for line in failed.stdout.splitlines() if line.startswith("FAILED")] == [
        "FAILED: listen policy: refusing to listen on 0.0.0.0 without credentials: add api_keys to a --config file, "
        "or pass --allow-open to serve an open queue on a network address"]
    assert spoolq("check-config", "--port", "0").stdout.startswith("FAILED: settings: port must be")


def test_a_root_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    done = spoolq("check-config", "--root", str(tmp_path / "afile"))
    assert done.returncode == 3 and done.stderr == ""
    assert done.stdout.splitlines()[-1] == f"FAILED: root {tmp_path / 'afile'} is a file, not a directory"
    served, _took = _serve("--root", str(tmp_path / "afile"))
    assert served.returncode == 3 and "is a file, not a directory" in served.stderr


def test_a_root_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    done = spoolq("check-config", "--root", str(tmp_path / "afile" / "sub"))
    assert done.returncode == 3
    assert "does not exist and cannot be created: Not a directory" in done.stdout


needs_mounts = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                  reason="a read-only or full file system needs root and unshare(1)")


def _in_mount_ns(mount_opts: str, fill: bool, *command: str) -> subprocess.CompletedProcess[str]:
    """``command`` (``{root}`` replaced) with a fresh tmpfs mounted at a new directory, in a private
    mount namespace (gone when the command ends)."""
    import tempfile

    mnt = tempfile.mkdtemp(prefix="spoolq-check-")
    try:
        fill_cmd = f"dd if=/dev/zero of={mnt}/fill bs=4k >/dev/null 2>&1; " if fill else ""
        remount = f"mount -o remount,ro {mnt} && " if "ro" in mount_opts.split(",") else ""
        script = (f"mount -t tmpfs -o size=256k tmpfs {mnt} && mkdir {mnt}/queues && {fill_cmd}{remount}"
                  f"exec \"$@\"")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_") and k != "PROMETHEUS_MULTIPROC_DIR"}
        env["PYTHONPATH"] = str(CHECKOUT / "service")
        argv = [c.replace("{root}", mnt) for c in command]
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv],
                              capture_output=True, text=True, env=env, timeout=60)
    finally:
        os.rmdir(mnt)


@needs_mounts
def test_a_read_only_root_is_reported_as_read_only_and_refused_by_serve() -> None:
    done = _in_mount_ns("ro", False, sys.executable, "-m", "spoolq.cli", "check-config", "--root", "{root}")
    assert done.returncode == 3, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("FAILED: root ") and last.endswith("exists but is not writable (Read-only file system)")
    assert "cannot create" not in done.stdout and done.stderr == ""
    served = _in_mount_ns("ro", False, sys.executable, "-m", "spoolq.cli", "serve", "--root", "{root}",
                          "--port", str(free_port()))
    assert served.returncode == 3 and "Read-only file system" in served.stderr and "serving" not in served.stderr


@needs_mounts
def test_a_full_root_is_a_warning_not_a_failure() -> None:
    done = _in_mount_ns("rw", True, sys.executable, "-m", "spoolq.cli", "check-config", "--root", "{root}")
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("warning: root ") and "no space left" in last and "sends answer 503" in last


def test_help_is_written_for_users() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYTHONPATH"] = str(CHECKOUT / "service")
    helps = {name: subprocess.run([sys.executable, "-m", "spoolq.cli", name, "--help"], capture_output=True,
                                  text=True, env=env, timeout=30).stdout for name in ("serve", "check-config")}
    for name, text in helps.items():
        assert "``" not in text and ":mod:" not in text and ":func:" not in text, name
        assert "MQ --" not in text, name
    serve = " ".join(helps["serve"].split())
    # what the worker does (http/gunicorn/worker.py): a waiting long poll is parked, with no thread
    assert "a long poll that is waiting for a message holds no thread" in serve
    assert "HUP" in serve and "USR2" in serve
    check = helps["check-config"]
    assert "exit status" in check and "  3  the data directory is not usable" in check


def test_docs_say_what_a_waiting_long_poll_holds() -> None:
    ops = " ".join((CHECKOUT / "docs/operations.md").read_text().split())
    http = " ".join((CHECKOUT / "docs/http.md").read_text().split())
    assert "must exceed the number of concurrent long pollers" not in ops
    assert "holds a thread for up to 20 s" not in ops
    assert "a long poll that is waiting holds no thread" in ops
    assert "does not hold a thread" in http
