"""``spoolq`` as a user runs it: ``python -m spoolq.cli`` in a subprocess, with no ``SPOOLQ_*`` variable
but the ones a test gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.spoolq_server import KEY_ALL

CHECKOUT = Path(__file__).resolve().parents[2]


def spoolq(*args: str, url: str | None = None, key: str | None = KEY_ALL, stdin: str | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOOLQ_")}
    env["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT / "service"), str(CHECKOUT / "clients/python")])
    if url is not None:
        env["SPOOLQ_URL"] = url
    if key is not None:
        env["SPOOLQ_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "spoolq.cli", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=timeout)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout
