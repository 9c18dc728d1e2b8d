"""``spoolq serve`` / ``spoolq hash-key`` argument handling (no server is started)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from spoolq.access.auth import hash_key
from spoolq.cli import main
from spoolq.cli.serve import SERVE
from spoolq.http.gunicorn.server import gunicorn_options
from spoolq.settings.server import Settings


def test_serve_refuses_open_mode_on_a_network_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0", "--root", "/tmp/unused"]) == 2
    assert "--allow-open" in capsys.readouterr().err


def test_serve_rejects_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0"]) == 2
    with pytest.raises(SystemExit):
        SERVE.parser().parse_args(["--fsync", "sometimes"])


def test_serve_flags_parse() -> None:
    args = SERVE.parser().parse_args(["--root", "/r", "--port", "9000", "--workers", "2", "--threads", "8",
                                      "--peers", "3", "--fsync", "never", "--node-id", "n1", "--allow-open"])
    assert (args.root, args.port, args.workers, args.threads, args.peers, args.fsync, args.node_id,
            args.allow_open) == (Path("/r"), 9000, 2, 8, 3, "never", "n1", True)


def test_gunicorn_options_suit_long_polls() -> None:
    opts = gunicorn_options(Settings(workers=3, threads=16, node_id="n"))
    assert opts["workers"] == 3 and opts["threads"] == 16
    assert opts["worker_class"] in ("spoolq.http.gunicorn.worker.SpoolqThreadWorker", "gthread")
    assert opts["timeout"] >= 60 and opts["worker_connections"] > opts["threads"]
    assert "%(q)s" not in opts["access_log_format"] and "%(r)s" not in opts["access_log_format"]


def test_hash_key_from_stdin() -> None:
    out = subprocess.run([sys.executable, "-m", "spoolq.cli", "hash-key", "--stdin"], input="s3cret\n",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == hash_key("s3cret")


def test_in_memory_is_loopback_only_unless_asked_and_makes_its_own_root(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--in-memory", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--allow-in-memory" in err and "0.0.0.0" in err
    assert main(["serve", "--in-memory", "--root", "/tmp/unused"]) == 2
    assert "leave out --root" in capsys.readouterr().err
    from spoolq.cli import in_memory

    in_memory.check(root=None, host="0.0.0.0", allowed=True)  # asked for: allowed
    in_memory.check(root=None, host="::1", allowed=False)  # loopback: allowed
