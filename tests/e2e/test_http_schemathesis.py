"""schemathesis against a running ``spoolq serve``, from the checked-in openapi.yaml.

Checks: no 5xx, every status / content type / header / body as the contract says. Bounded:
a few examples per operation, deterministic generation. The only change to the contract
for this run is a lower ceiling on the long-poll ``wait`` parameters (0.2 s instead of 20 s),
so generated long polls do not dominate the run time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from spoolq.http.openapi import OPENAPI_PATH
from tests.e2e.spoolq_server import KEY_ALL, running_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance,response_headers_conformance")


def _short_waits(spec: dict[str, Any]) -> dict[str, Any]:
    for path in spec["paths"].values():
        for op in path.values():
            for p in op.get("parameters", []) if isinstance(op, dict) else []:
                if p.get("name") == "wait":
                    p["schema"]["maximum"] = 0.2
    return spec


def test_contract_holds(tmp_path: Path) -> None:
    st = shutil.which("st") or str(Path(sys.executable).parent / "st")
    spec = _short_waits(yaml.safe_load(OPENAPI_PATH.read_text()))
    schema = tmp_path / "openapi.yaml"
    schema.write_text(yaml.safe_dump(spec, sort_keys=False))
    with running_server(tmp_path, workers=2, threads=16) as server:
        proc = subprocess.run(
            [st, "run", str(schema), "--url", server.url, "-c", CHECKS, "-n", "5", "--phases", "coverage,fuzzing",
             "--generation-deterministic", "--request-timeout", "30", "-H", f"X-BV-API-Key: {KEY_ALL}"],
            capture_output=True, text=True, timeout=840)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
