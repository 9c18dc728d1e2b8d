"""What Schemathesis found the server doing against its contract, each fixed and held here (open mode,
the real file store): the server refuses what openapi.yaml forbids and accepts what it allows."""

from __future__ import annotations

import json

import pytest
import yaml
from flask.testing import FlaskClient

from spoolq.http.openapi import OPENAPI_PATH
from spoolq.store import FileStore


def test_a_disque_queue_needs_a_name(client: FlaskClient, file_store: FileStore) -> None:
    answer = client.post("/console/api/queues", json={"name": "", "door": "disque"})
    assert answer.status_code == 400
    assert file_store.list_queues() == []


def test_a_method_the_mq_door_lacks_is_a_405_with_allow(client: FlaskClient) -> None:
    answer = client.open("/mq/x", method="TRACE")
    assert answer.status_code == 405
    assert set(answer.headers["Allow"].split(", ")) >= {"GET", "PUT", "DELETE"}


@pytest.mark.parametrize("ttl", ["1e2", "1E2", "0.001", "2.5e-3", "31536000"])
def test_mq_ttls_inside_the_contracts_range_are_taken(client: FlaskClient, ttl: str) -> None:
    assert client.put("/mq/q").status_code == 201
    assert client.post(f"/mq/q/messages?ttl={ttl}", data=b"x").status_code == 201


@pytest.mark.parametrize("ttl", ["1e-9", "0.0004", "0", "31536001", "1e999", "nan"])
def test_mq_ttls_outside_are_refused_with_the_contracts_range(client: FlaskClient, ttl: str) -> None:
    assert client.put("/mq/q").status_code == 201
    answer = client.post(f"/mq/q/messages?ttl={ttl}", data=b"x")
    assert answer.status_code == 400
    assert answer.get_data(as_text=True).strip() == "ttl must be a number of seconds in [0.001, 3.1536e+07]"
    spec = yaml.safe_load(OPENAPI_PATH.read_text())
    ttl_param = next(p for p in spec["paths"]["/mq/{queue}/messages"]["post"]["parameters"] if p["name"] == "ttl")
    assert (ttl_param["schema"]["minimum"], ttl_param["schema"]["maximum"]) == (0.001, 31536000)


def test_emodb_numbers_may_have_exponents(client: FlaskClient) -> None:
    assert client.post("/queue/1/q/send?delay=1e1&ttl=1E2", json={"a": 1}).status_code == 200


@pytest.mark.parametrize("body", [[False], [1], [{}], [None], "t", ["bad token!"]])
def test_batch_tokens_are_strings(client: FlaskClient, body: object) -> None:
    for verb in ("ackbatches", "renewbatches"):
        answer = client.post(f"/queue/1/q/{verb}", json=body)
        assert answer.status_code == 400, (verb, body, answer.get_data(as_text=True))


def test_the_largest_max_bytes_the_contract_allows_is_taken(client: FlaskClient) -> None:
    client.post("/queue/1/q/send", json="m")
    answer = client.post("/queue/1/q/claimbatch?token=t&maxBytes=9223372036854775807")
    assert answer.status_code == 200 and len(answer.get_json()) == 1


def test_a_null_body_names_what_is_wrong(client: FlaskClient) -> None:
    answer = client.post("/queue/1/q/send", data="null", content_type="application/json")
    assert answer.status_code == 422
    errors = answer.get_json()["errors"]
    assert errors and all(isinstance(e, str) and e for e in errors)


def test_options_lists_the_methods_of_the_route_the_path_matched(client: FlaskClient) -> None:
    for path, methods in [("/console/api/queues/delete-empty", {"POST", "OPTIONS"}),
                          ("/queue/1/_move", {"POST", "OPTIONS"}),
                          ("/queue/1/_queues", {"GET", "HEAD", "OPTIONS"})]:
        answer = client.options(path)
        assert set(answer.headers["Allow"].split(", ")) == methods, path
        for other in ({"GET", "DELETE", "POST", "PUT"} - methods):
            assert client.open(path, method=other).status_code == 405, (path, other)


def test_the_console_takes_true_or_false_for_booleans(client: FlaskClient, file_store: FileStore) -> None:
    answer = client.post("/console/api/queues", json={"name": "jobs", "door": "mq", "content_based_dedup": 0})
    assert answer.status_code == 400
    assert file_store.list_queues() == []


def test_security_is_optional_in_the_contract_as_in_open_mode(client: FlaskClient) -> None:
    spec = yaml.safe_load(OPENAPI_PATH.read_text())
    secured = [op for path in spec["paths"].values() for op in path.values()
               if isinstance(op, dict) and "security" in op]
    assert secured and all({} in op["security"] for op in secured)
    assert client.get("/queue/1/q/size").status_code == 200  # no key: open mode


def test_a_queue_is_created_with_its_settings_and_tags_at_once(client: FlaskClient, file_store: FileStore) -> None:
    assert client.post("/console/api/queues", json={"name": "dlq", "door": "queue"}).status_code == 200
    answer = client.post("/console/api/queues", json={
        "name": "audq", "door": "queue", "tags": {"team": "shop"},
        "settings": {"archive": True, "visibility_timeout": 90, "dead_letter": {"queue": "dlq", "max_receives": 3}}})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    info = file_store.get_queue("audq")
    assert info.config.archive and info.config.claim_ttl == 90 and dict(info.tags) == {"team": "shop"}
    assert info.config.dead_letter is not None and info.config.dead_letter.queue == "dlq"
    refused = client.post("/console/api/queues", json={"name": "other", "door": "queue",
                                                       "settings": {"retention": 5}})
    assert refused.status_code == 400 and "retention" in json.loads(refused.data)["message"]
    assert "other" not in file_store.list_queues(), "a refused setting makes no queue"
