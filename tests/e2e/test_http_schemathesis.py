"""Schemathesis against real gunicorn (``spoolq serve``), from the checked-in openapi.yaml: every
check, every phase (examples, coverage, fuzzing, stateful), in open mode and with API keys.

Bounded: 10 examples per operation, deterministic generation (about half a minute per mode).

What the run changes, and why (nothing else is left off):

* the long-poll ``wait`` parameters are left out of the copy of the contract it runs from: a
  generated ``wait`` near 20 s on an empty queue holds the request that long, which would make the
  run take hours; their range is checked by the doors' own tests;
* with API keys, the contract's empty security alternative (``{}``: "no key needed", true only of
  a service without identities) is dropped, so ``ignored_auth`` holds the server to refusing
  requests without a key or with a wrong one;
* ``positive_data_acceptance`` (a request the schema allows must not get 400) also accepts 400 on
  the operations in :data:`STATE_DEPENDENT`: each refuses, with a 400 naming the reason, a request
  whose validity depends on the state of the store or on another field, which a schema cannot
  state. Every other operation must accept every schema-valid request.
"""

from __future__ import annotations

import json
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

#: operations whose schema-valid requests may still be refused with 400, and the reason each gives
STATE_DEPENDENT: dict[str, str] = {
    "send": "a queue that exists with the other archive setting than archive= names",
    "dedup_send": "the same",
    "send_batch": "the same",
    "dedup_send_batch": "the same",
    "send_batches": "the same; and an object key that is not a queue name (keys have no schema in OpenAPI 3.0)",
    "dedup_send_batches": "the same",
    "ack": "a message id whose checksum does not bind it to this queue",
    "dedup_ack": "the same",
    "renew": "the same",
    "dedup_renew": "the same",
    "move": "a move of a queue to itself",
    "dedup_move": "the same",
    "update_settings": "a dead-letter queue that does not exist, or of the other FIFO-ness",
    "dedup_update_settings": "the same",
    "mq_send": "a body over the queue's own max_message_bytes setting",
    "mq_delete": "a message id whose checksum does not bind it to this queue",
    "console_create": "a name that breaks the chosen door's rule; a dead-letter queue that does not exist",
    "console_delete": "the confirmation is not the queue's name",
    "console_purge": "the confirmation is not the queue's name",
    "console_send": "format json with a body that is not JSON",
    "console_ack": "a receipt whose checksum does not bind it to this queue",
    "console_release": "the same",
    "console_delete_message": "the same",
    "console_move": "no destination, or the queue itself",
    "console_redrive": "no destination named and the queue is no queue's dead-letter queue",
}
_ALL_BUT_400 = ["200", "201", "202", "204", "3xx", "401", "403", "404", "409", "429", "5xx"]


def _contract(keys: bool) -> dict[str, Any]:
    spec = yaml.safe_load(OPENAPI_PATH.read_text())
    for path in spec["paths"].values():
        for op in path.values():
            if not isinstance(op, dict):
                continue
            op["parameters"] = [p for p in op.get("parameters", []) if p.get("name") != "wait"]
            if keys and "security" in op:
                op["security"] = [s for s in op["security"] if s]
    return spec


def _config() -> str:
    lines = []
    for operation_id, reason in STATE_DEPENDENT.items():
        lines += [f"# {operation_id}: {reason}", "[[operations]]", f'include-operation-id = "{operation_id}"',
                  "checks.positive_data_acceptance.expected-statuses = "
                  + json.dumps([*_ALL_BUT_400, "400"]), ""]
    return "\n".join(lines)


@pytest.mark.parametrize("keys", [False, True], ids=["open", "keys"])
def test_contract_holds(tmp_path: Path, keys: bool) -> None:
    st = shutil.which("st") or str(Path(sys.executable).parent / "st")
    schema = tmp_path / "openapi.yaml"
    schema.write_text(yaml.safe_dump(_contract(keys), sort_keys=False))
    config = tmp_path / "schemathesis.toml"
    config.write_text(_config())
    auth = ["-H", f"X-BV-API-Key: {KEY_ALL}"] if keys else []
    with running_server(tmp_path, keys=keys, workers=2, threads=16, extra_args=("--fsync", "never")) as server:
        proc = subprocess.run(
            [st, "--config-file", str(config), "run", str(schema), "--url", server.url, "-c", "all", "-n", "10",
             "--phases", "examples,coverage,fuzzing,stateful", "--generation-deterministic",
             "--request-timeout", "30", "--continue-on-failure", *auth],
            capture_output=True, text=True, timeout=840, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
