"""The checked-in openapi.yaml is what the code exports, and it describes every route."""

from __future__ import annotations

import yaml

from spoolq.http.openapi import OPENAPI_PATH, openapi_dict, render_openapi


def test_checked_in_openapi_is_current() -> None:
    assert OPENAPI_PATH.read_text(encoding="utf-8") == render_openapi(), (
        "openapi.yaml is stale: run scripts/export-openapi and commit the result")


def test_operation_ids_are_the_verbs() -> None:
    spec = openapi_dict()
    ids = {op["operationId"] for path in spec["paths"].values() for op in path.values() if isinstance(op, dict)
           and "operationId" in op}
    verbs = {"send", "send_batch", "send_batches", "poll", "ack", "renew", "peek", "size", "claim_count",
             "purge", "unclaim_all", "move", "move_status"}
    assert verbs <= ids
    assert {"dedup_" + v for v in verbs} <= ids
    assert {"mq_create_queue", "mq_get_queue", "mq_delete_queue", "mq_fetch", "mq_send", "mq_delete"} <= ids
    assert len(ids) == sum(1 for p in spec["paths"].values() for op in p.values() if isinstance(op, dict)
                           and "operationId" in op)


def test_no_route_claims_post_root() -> None:
    spec = yaml.safe_load(OPENAPI_PATH.read_text())
    assert "/" not in spec["paths"]
