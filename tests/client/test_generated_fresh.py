"""The checked-in generated client equals a fresh generation from openapi.yaml (scripts/generate-client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def test_generated_client_is_fresh() -> None:
    done = subprocess.run([sys.executable, str(CHECKOUT / "scripts/generate-client"), "--check"],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]


def test_operation_ids_are_the_verbs() -> None:
    api = CHECKOUT / "clients/python/spoolq_client/_generated/api"
    names = {p.stem for p in api.rglob("*.py") if p.stem != "__init__"}
    verbs = {"send", "send_batch", "send_batches", "poll", "peek", "renew", "ack", "size", "claim_count",
             "purge", "unclaim_all", "move", "move_status", "list_queues"}
    assert verbs <= names
    assert {f"dedup_{v}" for v in verbs - {"list_queues"}} <= names
    assert {"mq_create_queue", "mq_get_queue", "mq_delete_queue", "mq_fetch", "mq_send", "mq_delete",
            "healthz", "metrics"} <= names
