"""The AWS SDK for JavaScript v3 (``@aws-sdk/client-sns``) against a real spoolq: ``js/fanout.mjs``.

Its packages are installed at test time into a cache outside the checkout
(``${SPOOLQ_TEST_CACHE:-~/.cache/spoolq-tests}/sns-js``, npm's default registry; nothing is
committed); the test is skipped with the reason where Node.js or npm is missing or the install fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sqs.harness import SpoolqProcess

HERE = Path(__file__).resolve().parent / "js"
CACHE = Path(os.environ.get("SPOOLQ_TEST_CACHE", Path.home() / ".cache" / "spoolq-tests")) / "sns-js"


def _installed() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are needed for the JavaScript SDK test")
    CACHE.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "fanout.mjs"):
        shutil.copyfile(HERE / name, CACHE / name)
    if not (CACHE / "node_modules" / "@aws-sdk" / "client-sns").is_dir():
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=CACHE,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"npm install failed: {done.stderr[-500:]}")
    return CACHE


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_javascript_sdk_v3(sns_server: SpoolqProcess, name: Callable[[str], str]) -> None:
    where = _installed()
    run = subprocess.run(["node", "fanout.mjs", sns_server.url, name("js")], cwd=where, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["topic"].startswith("arn:aws:sns:us-east-1:123456789012:") and result["messageId"]
    assert result["batch"] == ["a", "b"] and result["confirmed"] == "2"
    assert result["all"] == ["a book", "a pen", "batch a", "batch b"]
    assert result["books"] == ["a book"]
    assert result["error"] == {"name": "NotFoundException", "message": "Topic does not exist", "status": 404}
