"""``spoolq pipeline audit`` (and replay) over a root where no queue keeps its archive: one sentence
saying so and how to turn it on, exit 2, never Spark's PATH_NOT_FOUND or a Java stack trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spoolq.store import FileStore, OutgoingMessage
from spoolq_spark.archive import NoArchive, read_archive

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

SENTENCE = "has its archive on, so there is nothing to read: turn it on with `spoolq settings QUEUE --archive on`"


def _root_without_archive(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    store = FileStore(root, fsync=False)
    store.create_queue("jobs")
    store.send("jobs", OutgoingMessage(b'"x"'))
    [delivery] = store.poll("jobs")
    store.ack("jobs", [delivery.receipt])  # acknowledged, but the archive is off
    store.close()
    return root


def test_reading_an_archive_that_is_not_there_says_how_to_turn_it_on(spark: Any, tmp_path: Path) -> None:
    root = _root_without_archive(tmp_path)
    with pytest.raises(NoArchive, match=r"^no queue under .* " + SENTENCE.replace("(", r"\(").split(",")[0]):
        read_archive(spark, str(root))
    with pytest.raises(NoArchive, match=r"^none of the queues jobs under "):
        read_archive(spark, str(root), ["jobs"])


def test_the_audit_command_ends_in_one_sentence(tmp_path: Path) -> None:
    root = _root_without_archive(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    done = subprocess.run([sys.executable, "-m", "spoolq.cli", "pipeline", "--master", "local[1]", "audit", str(root),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("spoolq pipeline audit:")]
    assert len(lines) == 1 and SENTENCE in lines[0], done.stderr[-3000:]
    assert "PATH_NOT_FOUND" not in done.stderr and "\tat org.apache" not in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
